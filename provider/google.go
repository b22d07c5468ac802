package provider

import (
	"net/url"
	"strings"

	"github.com/intakehq/intake"
)

// googleAdapter verifies Google Calendar and Drive push notifications
// (https://developers.google.com/calendar/api/guides/push,
// https://developers.google.com/drive/api/guides/push): a channel is opened
// with a token, which Google sends back as X-Goog-Channel-Token; the secret
// is that token. A notification carries no data and no id, only that a
// resource changed (X-Goog-Resource-State: sync when the channel opens,
// then exists, not_exists, or Drive's add, update, remove, trash, …), so
// each becomes a change notice. Google signs nothing and no time.
type googleAdapter struct{}

func init() { Register(googleAdapter{}) }

func (googleAdapter) Name() string { return "google" }

func (googleAdapter) ValidateConfig(Config) error { return nil }

func (googleAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	token := headerValue(r.Header, "X-Goog-Channel-Token")
	if token == "" {
		return sigError("google: X-Goog-Channel-Token header missing")
	}
	if anySecretEquals(secrets, token) {
		return nil
	}
	return sigError("google: X-Goog-Channel-Token matches no secret")
}

// googleHeaders are the notification's headers kept as its data; the
// channel token is a credential and is not.
var googleHeaders = map[string]string{
	"X-Goog-Channel-ID":         "channel_id",
	"X-Goog-Channel-Expiration": "channel_expiration",
	"X-Goog-Resource-State":     "resource_state",
	"X-Goog-Resource-ID":        "resource_id",
	"X-Goog-Resource-URI":       "resource_uri",
	"X-Goog-Message-Number":     "message_number",
	"X-Goog-Changed":            "changed",
}

func (googleAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	state := headerValue(r.Header, "X-Goog-Resource-State")
	if state == "" {
		return Interpretation{}, Permanent("google: X-Goog-Resource-State header missing")
	}
	data := map[string]string{}
	for h, field := range googleHeaders {
		if v := headerValue(r.Header, h); v != "" {
			data[field] = v
		}
	}
	spec := EventSpec{
		Type: "google." + googleService(data["resource_uri"]) + "." + typeSegment(state),
		Kind: intake.KindChangeNotice,
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, data["resource_id"])
	spec.ObjectIDs = appendID(spec.ObjectIDs, data["channel_id"])
	spec.Data, spec.DataTruncated = itemData(data)
	return single(spec), nil
}

// googleService names the API a resource URI belongs to
// ("https://www.googleapis.com/calendar/v3/…" → calendar), "push" when the
// URI names none.
func googleService(resourceURI string) string {
	u, err := url.Parse(resourceURI)
	if err != nil || !strings.HasSuffix(u.Hostname(), "googleapis.com") {
		return "push"
	}
	service, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if service == "" {
		return "push"
	}
	return typeSegment(service)
}
