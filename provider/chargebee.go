package provider

import (
	"encoding/base64"
	"sort"
	"strings"

	"github.com/intakehq/intake"
)

// chargebeeAdapter verifies Chargebee webhooks
// (https://www.chargebee.com/docs/2.0/webhook_settings.html), which carry
// no signature: the webhook is protected by HTTP basic auth, whose user
// name and password Chargebee sends in Authorization. A secret is
// "user:password", compared in constant time. Chargebee signs no time.
type chargebeeAdapter struct{}

func init() { Register(chargebeeAdapter{}) }

func (chargebeeAdapter) Name() string { return "chargebee" }

func (chargebeeAdapter) ValidateConfig(Config) error { return nil }

// basicCredentials is the "user:password" of a basic Authorization header.
func basicCredentials(header string) (string, bool) {
	scheme, encoded, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "", false
	}
	creds, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil || !strings.Contains(string(creds), ":") {
		return "", false
	}
	return string(creds), true
}

func (chargebeeAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "Authorization")
	if header == "" {
		return sigError("chargebee: Authorization header missing")
	}
	creds, ok := basicCredentials(header)
	if !ok {
		return sigError("chargebee: Authorization is not basic auth user:password")
	}
	if anySecretEquals(secrets, creds) {
		return nil
	}
	return sigError("chargebee: credentials match no secret")
}

func (chargebeeAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("chargebee: body is not a JSON object: %v", err)
	}
	typ := str(m, "event_type")
	if typ == "" {
		return Interpretation{}, Permanent("chargebee: event has no event_type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "chargebee." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["occurred_at"]),
	}
	// content holds the resources the event is about, each under its name
	// (subscription, customer, invoice, …); sorted so the order is stable.
	content, _ := m["content"].(map[string]any)
	names := make([]string, 0, len(content))
	for k := range content {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(content, k, "id")))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
