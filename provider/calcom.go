package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// calcomAdapter verifies Cal.com webhooks: X-Cal-Signature-256 is the hex
// HMAC-SHA256 of the body under the webhook's secret, as Cal.com's sender
// writes it (calcom/cal.com, packages/features/webhooks/lib/sendPayload.ts,
// createWebhookSignature). A webhook without a secret
// sends "no-secret-provided", which never verifies. Cal.com signs no
// timestamp.
//
// The default body is {"triggerEvent":…,"createdAt":…,"payload":{…}}; a
// webhook with a custom payload template sends whatever the template
// writes, JSON or a form.
type calcomAdapter struct{}

func init() { Register(calcomAdapter{}) }

func (calcomAdapter) Name() string { return "calcom" }

func (calcomAdapter) ValidateConfig(Config) error { return nil }

func (calcomAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Cal-Signature-256")
	if header == "" {
		return sigError("calcom: X-Cal-Signature-256 header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("calcom: no signature matches")
}

func (calcomAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, _ := decodeObject(r.Body)
	trigger := str(m, "triggerEvent")
	if trigger == "" {
		spec := EventSpec{Type: "calcom.webhook", Kind: intake.KindEvent}
		spec.Data, spec.DataTruncated = bodyData(r.Body)
		return single(spec), nil
	}
	uid := firstOf(str(m, "payload", "uid"), str(m, "payload", "bookingUid"), str(m, "payload", "oooEntry", "uuid"))
	spec := EventSpec{
		// Cal.com sends no event id. createdAt is when the trigger fired,
		// kept by its retries; with the trigger and the booking (or
		// out-of-office entry) it names the event.
		ProviderEventID: joinID(trigger, uid, str(m, "createdAt")),
		Type:            "calcom." + typeSegment(trigger),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["createdAt"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, uid)
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "payload", "rescheduleUid"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
