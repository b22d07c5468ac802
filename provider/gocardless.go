package provider

import (
	"crypto/sha256"
	"sort"

	"github.com/intakehq/intake"
)

// gocardlessAdapter verifies GoCardless webhooks
// (https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks):
// Webhook-Signature is the hex HMAC-SHA256 of the raw body under the
// endpoint's secret. GoCardless signs no time. The body batches events,
// {"events":[{"id":"EV…","resource_type":"mandates","action":"created",
// "links":{"mandate":"MD…"},…}]}; each is one event.
type gocardlessAdapter struct{}

func init() { Register(gocardlessAdapter{}) }

func (gocardlessAdapter) Name() string { return "gocardless" }

func (gocardlessAdapter) ValidateConfig(Config) error { return nil }

func (gocardlessAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "Webhook-Signature")
	if header == "" {
		return sigError("gocardless: Webhook-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("gocardless: no signature matches")
}

func (gocardlessAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("gocardless: body is not a JSON object: %v", err)
	}
	if _, ok := m["events"].([]any); !ok {
		return Interpretation{}, Permanent("gocardless: body has no events list")
	}
	events := objects(m, "events")
	specs := make([]EventSpec, 0, len(events))
	for _, ev := range events {
		resource, action := str(ev, "resource_type"), str(ev, "action")
		if resource == "" || action == "" {
			return Interpretation{}, Permanent("gocardless: an event has no resource_type or action")
		}
		spec := EventSpec{
			ProviderEventID: idString(ev["id"]),
			Type:            "gocardless." + typeSegment(resource) + "." + typeSegment(action),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(ev["created_at"]),
		}
		if spec.ProviderEventID == "" {
			spec.ProviderEventID = itemDigest("gocardless:", ev)
		}
		// links names the resources the event is about (mandate, payment,
		// subscription, …), sorted so the order is stable.
		links, _ := ev["links"].(map[string]any)
		names := make([]string, 0, len(links))
		for k := range links {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			spec.ObjectIDs = appendID(spec.ObjectIDs, idString(links[k]))
		}
		spec.Data, spec.DataTruncated = itemData(ev)
		specs = append(specs, spec)
	}
	return batch("gocardless", "", specs), nil
}
