package provider

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/intakehq/intake"
)

// openaiAdapter verifies OpenAI webhooks
// (https://platform.openai.com/docs/guides/webhooks), which are signed as
// Standard Webhooks: webhook-signature holds "v1,<base64 HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<body>">" under the endpoint's whsec_
// secret, base64-decoded. Like OpenAI's SDKs, a secret without the whsec_
// prefix is the key as written, a signature without its "v1," is read as
// v1, and the timestamp may sit five minutes either way of receipt.
type openaiAdapter struct{}

func init() { Register(openaiAdapter{}) }

func (openaiAdapter) Name() string { return "openai" }

func (openaiAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (openaiAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("openai", err)
	}
	if err := verifyStandard(r, openaiKeys(secrets), tolerance, true); err != nil {
		return fmt.Errorf("openai: %w", err)
	}
	return nil
}

// openaiKeys writes every secret as the whsec_ form verifyStandard reads:
// OpenAI's SDKs decode a whsec_ secret and use any other as its raw bytes
// (where the Standard Webhooks libraries would base64-decode it), and
// OpenAI signs with no Ed25519 keys.
func openaiKeys(secrets [][]byte) [][]byte {
	out := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		if len(s) == 0 {
			continue
		}
		if strings.HasPrefix(string(s), standardSecretPrefix) {
			out = append(out, s)
			continue
		}
		out = append(out, []byte(standardSecretPrefix+base64.StdEncoding.EncodeToString(s)))
	}
	return out
}

func (openaiAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("openai: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("openai: event has no type")
	}
	spec := EventSpec{
		// The body's evt_… id names the event; webhook-id names one
		// delivery of it.
		ProviderEventID: idString(m["id"]),
		Type:            "openai." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
