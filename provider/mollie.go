package provider

import (
	"crypto/sha256"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/intakehq/intake"
)

// mollieAdapter verifies Mollie's next-gen webhooks: X-Mollie-Signature is
// the hex HMAC-SHA256 of the raw body under the webhook's signing secret,
// optionally prefixed "sha256=" (https://docs.mollie.com/reference/webhooks-best-practices;
// mollie/mollie-api-php, src/Webhooks/SignatureValidator.php). While a
// secret rotates the header may be sent more than once; any value may
// match. Mollie signs no timestamp.
//
// Classic webhooks (a payment's webhookUrl) are unsigned and carry only the
// object's id, "id=tr_…"; Mollie's answer to forgery is that the receiver
// fetches the object from the API. They are accepted only with config
// classic: true, as change notices naming the id.
type mollieAdapter struct{}

func init() { Register(mollieAdapter{}) }

func (mollieAdapter) Name() string { return "mollie" }

func (mollieAdapter) ValidateConfig(cfg Config) error {
	_, err := boolSetting(cfg, "classic")
	return err
}

// mollieSignatures are the values of every X-Mollie-Signature header,
// comma-separated lists included, without their "sha256=" prefix.
func mollieSignatures(h http.Header) [][]byte {
	var values []string
	for k, vs := range h {
		if strings.EqualFold(k, "X-Mollie-Signature") {
			values = append(values, vs...)
		}
	}
	var sigs [][]byte
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			s = strings.TrimPrefix(s, "sha256=")
			sigs = append(sigs, decodeHexSigs(s)...)
		}
	}
	return sigs
}

// mollieClassicID is the id a classic webhook names, "" for other bodies:
// a form of exactly one id that looks like a Mollie id (tr_…, ord_…).
func mollieClassicID(body []byte) string {
	form, err := url.ParseQuery(string(body))
	if err != nil || len(form) != 1 || len(form["id"]) != 1 {
		return ""
	}
	id := form.Get("id")
	if !mollieIDPattern.MatchString(id) {
		return ""
	}
	return id
}

var mollieIDPattern = regexp.MustCompile(`^[a-z]+_[A-Za-z0-9]+$`)

func (mollieAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	classic, err := boolSetting(cfg, "classic")
	if err != nil {
		return configError("mollie", err)
	}
	if headerValue(r.Header, "X-Mollie-Signature") == "" {
		if classic && mollieClassicID(r.Body) != "" {
			return nil // unsigned by Mollie's design; it names an id and nothing else
		}
		return sigError("mollie: X-Mollie-Signature header missing")
	}
	sigs := mollieSignatures(r.Header)
	if len(sigs) == 0 {
		return sigError("mollie: X-Mollie-Signature is not hex")
	}
	if anyKeySigned(sha256.New, secrets, sigs, r.Body) {
		return nil
	}
	return sigError("mollie: no signature matches")
}

// mollieClassicResources names a classic webhook's object by its id's
// prefix.
var mollieClassicResources = map[string]string{
	"tr": "payment", "ord": "order", "sub": "subscription", "pl": "payment-link",
}

func (mollieAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if id := mollieClassicID(r.Body); id != "" {
		prefix, _, _ := strings.Cut(id, "_")
		typ := "mollie.changed"
		if resource, ok := mollieClassicResources[prefix]; ok {
			typ = "mollie." + resource + ".changed"
		}
		// A classic webhook says only that the object changed; each one is
		// a notice of its own, never a duplicate of an earlier one.
		spec := EventSpec{Type: typ, Kind: intake.KindChangeNotice, ObjectIDs: []string{id}}
		spec.Data, spec.DataTruncated = itemData(map[string]string{"id": id})
		return single(spec), nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("mollie: body is neither a JSON object nor a classic id: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("mollie: event has no type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]), // event_…, the same on every retry
		Type:            "mollie." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["createdAt"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "entityId"))
	// A full payload embeds the entity, under "entity" or (in the SDK's
	// fixtures) under its resource's name, "payment-link".
	embedded, _ := m["_embedded"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(embedded)) {
		if entity, ok := embedded[k].(map[string]any); ok {
			spec.ObjectIDs = appendID(spec.ObjectIDs, idString(entity["id"]))
		}
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
