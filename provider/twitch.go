package provider

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// twitchAdapter verifies Twitch EventSub webhooks: Twitch-Eventsub-Message-Signature:
// sha256=<hex HMAC-SHA256 of message id + timestamp + body> under the
// subscription's secret; messages older than ten minutes are refused
// (https://dev.twitch.tv/docs/eventsub/handling-webhook-events/). The
// webhook_callback_verification message is answered with its challenge.
type twitchAdapter struct{}

func init() { Register(twitchAdapter{}) }

// twitchTolerance is Twitch's ten minutes; it bounds only the age.
const twitchTolerance = 10 * time.Minute

const (
	twitchIDHeader        = "Twitch-Eventsub-Message-Id"
	twitchTimestampHeader = "Twitch-Eventsub-Message-Timestamp"
	twitchSignatureHeader = "Twitch-Eventsub-Message-Signature"
	twitchTypeHeader      = "Twitch-Eventsub-Message-Type"
)

func (twitchAdapter) Name() string { return "twitch" }

func (twitchAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, twitchTolerance)
	return err
}

func (twitchAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, twitchTolerance)
	if err != nil {
		return configError("twitch", err)
	}
	id := headerValue(r.Header, twitchIDHeader)
	ts := headerValue(r.Header, twitchTimestampHeader)
	header := headerValue(r.Header, twitchSignatureHeader)
	switch {
	case id == "":
		return sigError("twitch: %s header missing", twitchIDHeader)
	case ts == "":
		return sigError("twitch: %s header missing", twitchTimestampHeader)
	case header == "":
		return sigError("twitch: %s header missing", twitchSignatureHeader)
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return sigError("twitch: signature is not sha256=")
	}
	signedAt, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return sigError("twitch: timestamp is not RFC 3339")
	}
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, false); err != nil {
		return fmt.Errorf("twitch: %w", err)
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(hexSig), []byte(id+ts), r.Body) {
		return nil
	}
	return sigError("twitch: no signature matches")
}

// Challenge answers webhook_callback_verification with its challenge as
// plain text, once the signature holds; a forged one gets 403, as Twitch
// asks of a failed signature.
func (a twitchAdapter) Challenge(r *Request, secrets [][]byte, cfg Config) (Challenge, bool) {
	if headerValue(r.Header, twitchTypeHeader) != "webhook_callback_verification" {
		return Challenge{}, false
	}
	m, err := decodeObject(r.Body)
	challenge := str(m, "challenge")
	if err != nil || challenge == "" {
		return Challenge{}, false
	}
	if a.Verify(r, secrets, cfg) != nil {
		return Challenge{Status: http.StatusForbidden}, true
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge)}, true
}

func (twitchAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("twitch: body is not a JSON object: %v", err)
	}
	spec := EventSpec{
		ProviderEventID: headerValue(r.Header, twitchIDHeader),
		Kind:            intake.KindEvent,
	}
	if at, err := time.Parse(time.RFC3339Nano, headerValue(r.Header, twitchTimestampHeader)); err == nil {
		spec.OccurredAt = at.UTC()
	}
	switch kind := headerValue(r.Header, twitchTypeHeader); kind {
	case "webhook_callback_verification":
		return Interpretation{ProviderEventID: spec.ProviderEventID, EventType: "twitch.webhook_callback_verification",
			Kind: intake.KindEvent, Challenge: true}, nil
	case "revocation":
		spec.Type = "twitch.revocation"
	case "notification":
		sub := str(m, "subscription", "type")
		if sub == "" {
			return Interpretation{}, Permanent("twitch: notification has no subscription.type")
		}
		spec.Type = "twitch." + typeSegment(sub)
	default:
		return Interpretation{}, Permanent("twitch: unknown message type %q", typeSegment(kind))
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "subscription", "id"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "event", "broadcaster_user_id"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
