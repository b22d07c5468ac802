package provider

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/intakehq/intake"
)

// discordAdapter verifies Discord interactions
// (https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers):
// X-Signature-Ed25519 is the hex Ed25519 signature of
// X-Signature-Timestamp + body under the application's public key (the
// secret, hex, from the developer portal). Discord checks that an endpoint
// answers 401 to a bad signature and PONG ({"type":1}) to a PING, so the
// answer depends on verification and is given at ingress. Every other
// interaction needs an answer within three seconds; intake cannot wait for
// a consumer, so it defers (type 5, or 6 for components) and the consumer
// follows up with the interaction token. Config defer: false turns that
// off. Discord documents no tolerance; intake applies its default.
type discordAdapter struct{}

func init() { Register(discordAdapter{}) }

// Interaction types and callback types.
const (
	discordPing               = 1
	discordApplicationCommand = 2
	discordMessageComponent   = 3
	discordAutocomplete       = 4
	discordModalSubmit        = 5
)

var discordTypeNames = map[int64]string{
	discordPing:               "ping",
	discordApplicationCommand: "application_command",
	discordMessageComponent:   "message_component",
	discordAutocomplete:       "application_command_autocomplete",
	discordModalSubmit:        "modal_submit",
}

func (discordAdapter) Name() string { return "discord" }

func (discordAdapter) ValidateConfig(cfg Config) error {
	if _, err := toleranceSetting(cfg, defaultTolerance); err != nil {
		return err
	}
	_, err := discordDefers(cfg)
	return err
}

// discordDefers reads config defer, true when absent.
func discordDefers(cfg Config) (bool, error) {
	if _, ok := cfg["defer"]; !ok {
		return true, nil
	}
	return boolSetting(cfg, "defer")
}

func (discordAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("discord", err)
	}
	header := headerValue(r.Header, "X-Signature-Ed25519")
	ts := headerValue(r.Header, "X-Signature-Timestamp")
	switch {
	case header == "":
		return sigError("discord: X-Signature-Ed25519 header missing")
	case ts == "":
		return sigError("discord: X-Signature-Timestamp header missing")
	}
	sig, err := hex.DecodeString(strings.TrimSpace(header))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return sigError("discord: X-Signature-Ed25519 is not a hex Ed25519 signature")
	}
	if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
		return fmt.Errorf("discord: %w", err)
	}
	msg := append([]byte(ts), r.Body...)
	for _, secret := range secrets {
		pub, err := hex.DecodeString(strings.TrimSpace(string(secret)))
		if err == nil && len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig) {
			return nil
		}
	}
	return sigError("discord: no public key accepts the signature")
}

// Challenge answers every interaction, as Discord requires: 401 unless it
// is signed, PONG to a PING, and otherwise a deferral.
func (a discordAdapter) Challenge(r *Request, secrets [][]byte, cfg Config) (Challenge, bool) {
	if a.Verify(r, secrets, cfg) != nil {
		return Challenge{Status: http.StatusUnauthorized, ContentType: "text/plain", Body: []byte("invalid request signature")}, true
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Challenge{}, false
	}
	typ, _ := lookup(m, "type").(json.Number)
	n, _ := typ.Int64()
	var answer string
	switch n {
	case discordPing:
		answer = `{"type":1}`
	case discordApplicationCommand, discordModalSubmit:
		answer = `{"type":5}` // DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
	case discordMessageComponent:
		answer = `{"type":6}` // DEFERRED_UPDATE_MESSAGE
	case discordAutocomplete:
		answer = `{"type":8,"data":{"choices":[]}}` // autocomplete cannot be deferred
	default:
		return Challenge{}, false
	}
	if defers, err := discordDefers(cfg); n != discordPing && (err != nil || !defers) {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "application/json", Body: []byte(answer)}, true
}

func (discordAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("discord: body is not a JSON object: %v", err)
	}
	typ, _ := m["type"].(json.Number)
	n, err := typ.Int64()
	if err != nil {
		return Interpretation{}, Permanent("discord: interaction has no type")
	}
	if n == discordPing {
		return Interpretation{ProviderEventID: idString(m["id"]), EventType: "discord.ping", Kind: intake.KindEvent, Challenge: true}, nil
	}
	name, ok := discordTypeNames[n]
	if !ok {
		name = "interaction_" + typ.String()
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "discord." + name,
		Kind:            intake.KindEvent,
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["guild_id"]))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["channel_id"]))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "message", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
