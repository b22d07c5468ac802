package provider

import (
	"bytes"
	"crypto/sha256"
	"time"

	"github.com/intakehq/intake"
)

// quickbooksAdapter verifies QuickBooks Online webhooks
// (https://developer.intuit.com/app/developer/qbo/docs/develop/webhooks):
// intuit-signature is the base64 HMAC-SHA256 of the raw body under the
// app's verifier token. Intuit signs no time. A notification batches
// changes: eventNotifications[] per company (realmId), each with
// dataChangeEvent.entities[] ({"name":"Customer","id":"1","operation":
// "Create","lastUpdated":…}); each entity is one event. Intuit's CloudEvents
// form (a JSON array of events with their own id and type) is read too.
type quickbooksAdapter struct{}

func init() { Register(quickbooksAdapter{}) }

func (quickbooksAdapter) Name() string { return "quickbooks" }

func (quickbooksAdapter) ValidateConfig(Config) error { return nil }

func (quickbooksAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "intuit-signature")
	if header == "" {
		return sigError("quickbooks: intuit-signature header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("quickbooks: signature is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("quickbooks: no signature matches")
}

// quickbooksTime reads lastUpdated, which Intuit writes with a zone with or
// without a colon ("2015-10-05T14:42:19-0700").
func quickbooksTime(v any) time.Time {
	s, _ := v.(string)
	if t, err := time.Parse("2006-01-02T15:04:05.999999999-0700", s); err == nil {
		return t.UTC()
	}
	return unixTime(v)
}

func (a quickbooksAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if trimmed := bytes.TrimSpace(r.Body); len(trimmed) > 0 && trimmed[0] == '[' {
		return a.cloudEvents(r.Body)
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("quickbooks: body is not a JSON object: %v", err)
	}
	if _, ok := m["eventNotifications"].([]any); !ok {
		return Interpretation{}, Permanent("quickbooks: body has no eventNotifications list")
	}
	var specs []EventSpec
	for _, n := range objects(m, "eventNotifications") {
		realm := idString(n["realmId"])
		for _, e := range objects(n, "dataChangeEvent", "entities") {
			name, op := str(e, "name"), str(e, "operation")
			if name == "" || op == "" {
				return Interpretation{}, Permanent("quickbooks: an entity has no name or operation")
			}
			id := idString(e["id"])
			spec := EventSpec{
				// Intuit sends no event id; the company, entity, change and
				// its time stay the same when Intuit retries.
				ProviderEventID: joinID(realm, name, id, op, str(e, "lastUpdated")),
				Type:            "quickbooks." + typeSegment(name) + "." + typeSegment(op),
				Kind:            intake.KindEvent,
				OccurredAt:      quickbooksTime(e["lastUpdated"]),
			}
			if spec.ProviderEventID == "" {
				spec.ProviderEventID = itemDigest("quickbooks:", map[string]any{"realmId": realm, "entity": e})
			}
			spec.ObjectIDs = appendID(spec.ObjectIDs, id)
			spec.ObjectIDs = appendID(spec.ObjectIDs, idString(e["deletedId"]))
			spec.ObjectIDs = appendID(spec.ObjectIDs, realm)
			spec.Data, spec.DataTruncated = itemData(map[string]any{"realmId": realm, "entity": e})
			specs = append(specs, spec)
		}
	}
	return batch("quickbooks", "", specs), nil
}

// cloudEvents reads Intuit's CloudEvents form: [{"id":…,"type":
// "qbo.customer.created.v1","time":…,"intuitentityid":…,"intuitaccountid":…}].
func (quickbooksAdapter) cloudEvents(body []byte) (Interpretation, error) {
	items, err := decodeArray(body)
	if err != nil {
		return Interpretation{}, Permanent("quickbooks: body is not a JSON array of events: %v", err)
	}
	specs := make([]EventSpec, 0, len(items))
	for _, it := range items {
		typ := str(it, "type")
		if typ == "" {
			return Interpretation{}, Permanent("quickbooks: an event has no type")
		}
		spec := EventSpec{
			ProviderEventID: idString(it["id"]),
			Type:            "quickbooks." + typeSegment(typ),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(it["time"]),
		}
		if spec.ProviderEventID == "" {
			spec.ProviderEventID = itemDigest("quickbooks:", it)
		}
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(it["intuitentityid"]))
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(it["intuitaccountid"]))
		spec.Data, spec.DataTruncated = itemData(it)
		specs = append(specs, spec)
	}
	return batch("quickbooks", "", specs), nil
}
