package provider

import (
	"crypto/sha256"
	"net/http"
	"time"

	"github.com/intakehq/intake"
)

// xeroAdapter verifies Xero webhooks
// (https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/):
// x-xero-signature is the base64 HMAC-SHA256 of the raw body under the
// app's webhook key, as written. Xero signs no time. Before it sends events
// Xero proves the endpoint with "intent to receive" requests: a payload with
// no events, once correctly signed (it wants 200) and once not (it wants
// 401). Xero asks the same of every delivery, so each request is verified at
// ingress: 401 when it does not verify, 200 with an empty body when it does.
// The request is stored either way.
type xeroAdapter struct{}

func init() { Register(xeroAdapter{}) }

func (xeroAdapter) Name() string { return "xero" }

func (xeroAdapter) ValidateConfig(Config) error { return nil }

func (xeroAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "x-xero-signature")
	if header == "" {
		return sigError("xero: x-xero-signature header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("xero: signature is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("xero: no signature matches")
}

// Challenge answers as Xero's intent to receive requires: 401 unless the
// request verifies, else 200 with no body.
func (a xeroAdapter) Challenge(r *Request, secrets [][]byte, cfg Config) (Challenge, bool) {
	if a.Verify(r, secrets, cfg) != nil {
		return Challenge{Status: http.StatusUnauthorized, ContentType: "text/plain"}, true
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain"}, true
}

// xeroEventTime reads eventDateUtc, which Xero writes without a zone
// ("2017-06-21T01:15:39.902").
func xeroEventTime(v any) time.Time {
	s, _ := v.(string)
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t.UTC()
	}
	return unixTime(v)
}

func (xeroAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("xero: body is not a JSON object: %v", err)
	}
	list, isList := m["events"].([]any)
	if m["events"] != nil && !isList {
		return Interpretation{}, Permanent("xero: events is not a list")
	}
	if len(list) == 0 {
		// Intent to receive: nothing in it but sequence numbers and entropy.
		return Interpretation{EventType: "xero.intent_to_receive", Kind: intake.KindEvent, Challenge: true}, nil
	}
	events := objects(m, "events")
	specs := make([]EventSpec, 0, len(events))
	for _, ev := range events {
		category, action := str(ev, "eventCategory"), str(ev, "eventType")
		if category == "" || action == "" {
			return Interpretation{}, Permanent("xero: an event has no eventCategory or eventType")
		}
		spec := EventSpec{
			// Xero sends no event id; these fields name the change and
			// stay the same when Xero retries.
			ProviderEventID: joinID(str(ev, "tenantId"), category, action, str(ev, "resourceId"), str(ev, "eventDateUtc")),
			Type:            "xero." + typeSegment(category) + "." + typeSegment(action),
			Kind:            intake.KindEvent,
			OccurredAt:      xeroEventTime(ev["eventDateUtc"]),
		}
		if spec.ProviderEventID == "" {
			spec.ProviderEventID = itemDigest("xero:", ev)
		}
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(ev, "resourceId"))
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(ev, "tenantId"))
		spec.Data, spec.DataTruncated = itemData(ev)
		specs = append(specs, spec)
	}
	return batch("xero", "", specs), nil
}
