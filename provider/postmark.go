package provider

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// postmarkAdapter verifies Postmark webhooks, which are authenticated by
// HTTP basic auth: the webhook URL is given to Postmark with credentials
// (https://user:password@host/…), and each request carries them in
// Authorization (https://postmarkapp.com/developer/webhooks/webhooks-overview#protecting-your-webhook).
// A secret is "user:password". Postmark signs nothing else, and no time.
type postmarkAdapter struct{}

func init() { Register(postmarkAdapter{}) }

func (postmarkAdapter) Name() string { return "postmark" }

func (postmarkAdapter) ValidateConfig(Config) error { return nil }

func (postmarkAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "Authorization")
	if header == "" {
		return sigError("postmark: Authorization header missing")
	}
	scheme, encoded, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return sigError("postmark: Authorization is not basic auth")
	}
	creds, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil || !strings.Contains(string(creds), ":") {
		return sigError("postmark: basic auth credentials malformed")
	}
	if anySecretEquals(secrets, string(creds)) {
		return nil
	}
	return sigError("postmark: credentials match no secret")
}

func (postmarkAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("postmark: body is not a JSON object: %v", err)
	}
	record := str(m, "RecordType")
	messageID := idString(m["MessageID"])
	spec := EventSpec{Kind: intake.KindEvent}
	switch {
	case record != "":
		spec.Type = "postmark." + typeSegment(snakeCase(record))
		// Postmark sends no event id: a bounce has its own ID; other records
		// are named by the message and the time of what happened to it.
		when := firstOf(idString(m["ID"]), str(m, "DeliveredAt"), str(m, "ReceivedAt"), str(m, "BouncedAt"), str(m, "ChangedAt"))
		spec.ProviderEventID = joinID(record, messageID, when)
		spec.OccurredAt = unixTime(when)
	case messageID != "" && (m["FromFull"] != nil || m["From"] != nil):
		// An inbound message has no RecordType.
		spec.Type = "postmark.inbound"
		spec.ProviderEventID = "Inbound:" + messageID
		spec.OccurredAt = mailDate(str(m, "Date"))
	default:
		return Interpretation{}, Permanent("postmark: body is neither a RecordType event nor an inbound message")
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, messageID)
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// mailDate reads an email Date header as Postmark passes it on
// ("Fri, 1 Aug 2014 16:45:32 -04:00"); zero when it is none of the forms.
func mailDate(s string) time.Time {
	for _, layout := range []string{time.RFC1123Z, "Mon, 2 Jan 2006 15:04:05 -0700", "Mon, 2 Jan 2006 15:04:05 -07:00", time.RFC1123} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
