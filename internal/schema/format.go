package schema

import (
	"net/url"
	"regexp"
	"time"
)

// String formats this package recognises (JSON Schema's names for them).
const (
	FormatDateTime = "date-time"
	FormatUUID     = "uuid"
	FormatEmail    = "email"
	FormatURI      = "uri"
)

var (
	uuidRE     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	dateTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)
	emailRE    = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*" +
		`@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$`)
	// uriRE is a hierarchical URI of characters a URI may hold as they
	// are, or escaped: narrower than RFC 3986, so what it calls a uri is
	// one.
	uriRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$`)
	pctRE = regexp.MustCompile(`%([^0-9A-Fa-f]|.[^0-9A-Fa-f]|.?$)`)
)

// FormatOf names the format s has, or "": the first of uuid, date-time
// (RFC 3339), email and uri it matches. Each test is narrower than its
// format, so a string it names always validates as that format.
func FormatOf(s string) string {
	switch {
	case len(s) == 36 && uuidRE.MatchString(s):
		return FormatUUID
	case dateTimeRE.MatchString(s) && validTime(s):
		return FormatDateTime
	case len(s) <= 254 && emailRE.MatchString(s) && localPart(s) <= 64:
		return FormatEmail
	case uriRE.MatchString(s) && !pctRE.MatchString(s) && validURL(s):
		return FormatURI
	}
	return ""
}

func validTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func localPart(s string) int {
	for i := range len(s) {
		if s[i] == '@' {
			return i
		}
	}
	return len(s)
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}
