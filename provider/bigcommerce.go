package provider

import (
	"strings"

	"github.com/intakehq/intake"
)

// bigcommerceAdapter verifies BigCommerce webhooks
// (https://developer.bigcommerce.com/docs/integrations/webhooks), which are
// not signed: a hook is created with custom headers, which BigCommerce
// sends with every delivery. The secret is the value of one such header (by
// default Authorization; config key auth_header names another), compared in
// constant time. BigCommerce signs no time.
type bigcommerceAdapter struct{}

func init() { Register(bigcommerceAdapter{}) }

func (bigcommerceAdapter) Name() string { return "bigcommerce" }

func (bigcommerceAdapter) ValidateConfig(cfg Config) error {
	_, err := authHeader(cfg)
	return err
}

// CredentialHeaders is the header auth_header names: it carries the secret
// as it is.
func (bigcommerceAdapter) CredentialHeaders(cfg Config) []string { return authHeaders(cfg) }

func (bigcommerceAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	return verifyAuthHeader("bigcommerce", r, secrets, cfg)
}

func (bigcommerceAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("bigcommerce: body is not a JSON object: %v", err)
	}
	scope := str(m, "scope")
	if scope == "" {
		return Interpretation{}, Permanent("bigcommerce: payload has no scope")
	}
	spec := EventSpec{
		// BigCommerce sends no event id. hash is the SHA-1 of data, which
		// is small ({"type":"order","id":250}) and repeats across stores and
		// scopes, so the store and scope are part of the name, and
		// created_at tells two changes of one object apart; a retry keeps
		// them all.
		ProviderEventID: joinID(str(m, "producer"), scope, str(m, "hash"), idString(m["created_at"])),
		Type:            "bigcommerce." + typeSegment(strings.ReplaceAll(scope, "/", ".")),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("bigcommerce:", m)
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "orderId")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
