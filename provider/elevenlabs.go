package provider

import (
	"time"

	"github.com/intakehq/intake"
)

// elevenlabsAdapter verifies ElevenLabs webhooks
// (https://elevenlabs.io/docs/product-guides/administration/webhooks):
// ElevenLabs-Signature is "t=<unix seconds>,v0=<hex HMAC-SHA256 of
// "t.body">" under the webhook secret as written. Like the official SDKs,
// only the age of t is judged, thirty minutes by default. ElevenLabs sends
// no event id; the id is built from the type, the conversation and the
// event's own timestamp, which a retry repeats.
type elevenlabsAdapter struct{}

func init() { Register(elevenlabsAdapter{}) }

// elevenlabsTolerance is the SDKs' bound on a signature's age.
const elevenlabsTolerance = 30 * time.Minute

func (elevenlabsAdapter) Name() string { return "elevenlabs" }

func (elevenlabsAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, elevenlabsTolerance)
	return err
}

func (elevenlabsAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, elevenlabsTolerance)
	if err != nil {
		return configError("elevenlabs", err)
	}
	header := headerValue(r.Header, "ElevenLabs-Signature")
	if header == "" {
		return sigError("elevenlabs: ElevenLabs-Signature header missing")
	}
	return verifyTimestampedHMAC("elevenlabs", []string{header}, "v0", r, secrets, tolerance, false)
}

func (elevenlabsAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("elevenlabs: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("elevenlabs: event has no type")
	}
	conversation := idString(lookup(m, "data", "conversation_id"))
	spec := EventSpec{
		ProviderEventID: joinID(typ, conversation, idString(m["event_timestamp"])),
		Type:            "elevenlabs." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["event_timestamp"]),
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("elevenlabs:", m)
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, conversation)
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "agent_id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
