package provider

import (
	"strings"

	"github.com/intakehq/intake"
)

// personaAdapter verifies Persona webhooks
// (https://docs.withpersona.com/docs/webhooks-best-practices):
// Persona-Signature is "t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">"
// under the webhook secret as written; while a secret rotates it carries
// two such sets, space-separated, and either may verify. Persona publishes
// no SDK and no bound on t; intake applies its default, either way.
type personaAdapter struct{}

func init() { Register(personaAdapter{}) }

func (personaAdapter) Name() string { return "persona" }

func (personaAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (personaAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("persona", err)
	}
	header := headerValue(r.Header, "Persona-Signature")
	if header == "" {
		return sigError("persona: Persona-Signature header missing")
	}
	// Sets are separated by spaces; a space after a comma is not a new set.
	groups := strings.Fields(strings.ReplaceAll(header, ", ", ","))
	return verifyTimestampedHMAC("persona", groups, "v1", r, secrets, tolerance, true)
}

func (personaAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("persona: body is not a JSON object: %v", err)
	}
	name := str(m, "data", "attributes", "name")
	if name == "" {
		return Interpretation{}, Permanent("persona: event has no name")
	}
	spec := EventSpec{
		ProviderEventID: idString(lookup(m, "data", "id")),
		Type:            "persona." + typeSegment(name),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(lookup(m, "data", "attributes", "created-at")),
	}
	// The inquiry, verification, report or account the event is about.
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "attributes", "payload", "data", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
