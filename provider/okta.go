package provider

import (
	"net/http"

	"github.com/intakehq/intake"
)

// oktaAdapter verifies Okta event hooks
// (https://developer.okta.com/docs/concepts/event-hooks/). Okta
// authenticates each request with a header and value set on the hook (by
// default Authorization); the secret is that value, and config key
// auth_header names another header. Creating the hook sends a one-time GET
// carrying X-Okta-Verification-Challenge, answered with
// {"verification": <value>}. Deliveries batch events in data.events. Okta
// signs nothing and no time.
type oktaAdapter struct{}

func init() { Register(oktaAdapter{}) }

func (oktaAdapter) Name() string { return "okta" }

func (oktaAdapter) ValidateConfig(cfg Config) error {
	_, err := authHeader(cfg)
	return err
}

// CredentialHeaders is the header auth_header names: it carries the
// shared secret as it is.
func (oktaAdapter) CredentialHeaders(cfg Config) []string { return authHeaders(cfg) }

// oktaVerification is the one-time verification's challenge, "" for others.
func oktaVerification(r *Request) string {
	if r.Method != http.MethodGet {
		return ""
	}
	return headerValue(r.Header, "X-Okta-Verification-Challenge")
}

// Challenge answers the one-time verification request.
func (oktaAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	v := oktaVerification(r)
	if v == "" {
		return Challenge{}, false
	}
	body, err := marshalJSON(map[string]string{"verification": v})
	if err != nil {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "application/json", Body: body}, true
}

func (oktaAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	if oktaVerification(r) != "" {
		return nil // a handshake: it yields no events
	}
	return verifyAuthHeader("okta", r, secrets, cfg)
}

func (oktaAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if oktaVerification(r) != "" {
		return Interpretation{EventType: "okta.verification", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("okta: body is not a JSON object: %v", err)
	}
	var specs []EventSpec
	for _, item := range objects(m, "data", "events") {
		typ := str(item, "eventType")
		if typ == "" {
			continue
		}
		spec := EventSpec{
			ProviderEventID: firstOf(str(item, "uuid"), itemDigest("okta:", item)),
			Type:            "okta." + typeSegment(typ),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(item["published"]),
		}
		for _, target := range objects(item, "target") {
			spec.ObjectIDs = appendID(spec.ObjectIDs, str(target, "id"))
		}
		spec.Data, spec.DataTruncated = itemData(item)
		specs = append(specs, spec)
	}
	// eventId names the whole delivery and stays the same on a retry.
	return batch("okta", str(m, "eventId"), specs), nil
}
