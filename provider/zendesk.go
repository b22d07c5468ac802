package provider

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// zendeskAdapter verifies Zendesk webhooks
// (https://developer.zendesk.com/documentation/webhooks/verifying/):
// X-Zendesk-Webhook-Signature is the base64 HMAC-SHA256, under the
// webhook's signing secret as written, of
// X-Zendesk-Webhook-Signature-Timestamp (RFC 3339) followed by the body,
// which GET and DELETE webhooks leave empty. Zendesk documents no
// tolerance; intake applies its default, either way.
//
// A webhook subscribed to Zendesk events sends a typed event
// ({"type":"zen:event-type:user.created","id":…}); one connected to a
// trigger or automation sends whatever body the trigger defines.
type zendeskAdapter struct{}

func init() { Register(zendeskAdapter{}) }

const (
	zendeskSignatureHeader = "X-Zendesk-Webhook-Signature"
	zendeskTimestampHeader = "X-Zendesk-Webhook-Signature-Timestamp"
	// zendeskInvocationHeader names one invocation of a webhook; its
	// retries are attempts of the same invocation.
	zendeskInvocationHeader = "X-Zendesk-Webhook-Invocation-Id"
	// zendeskEventPrefix opens every event type Zendesk sends.
	zendeskEventPrefix = "zen:event-type:"
)

func (zendeskAdapter) Name() string { return "zendesk" }

func (zendeskAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (zendeskAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("zendesk", err)
	}
	header := headerValue(r.Header, zendeskSignatureHeader)
	ts := headerValue(r.Header, zendeskTimestampHeader)
	switch {
	case header == "":
		return sigError("zendesk: %s header missing", zendeskSignatureHeader)
	case ts == "":
		return sigError("zendesk: %s header missing", zendeskTimestampHeader)
	}
	signedAt, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return sigError("zendesk: timestamp is not RFC 3339")
	}
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, true); err != nil {
		return fmt.Errorf("zendesk: %w", err)
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("zendesk: signature is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, []byte(ts), r.Body) {
		return nil
	}
	return sigError("zendesk: no signature matches")
}

func (zendeskAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, _ := decodeObject(r.Body)
	if typ := str(m, "type"); strings.HasPrefix(typ, "zen:") {
		spec := EventSpec{
			ProviderEventID: idString(m["id"]),
			Type:            "zendesk." + typeSegment(strings.ReplaceAll(strings.TrimPrefix(typ, zendeskEventPrefix), ":", ".")),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(m["time"]),
		}
		// The subject ("zen:ticket:35436") names the object whatever its
		// kind; detail.id alone would not.
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "subject"))
		spec.Data, spec.DataTruncated = eventData(r.Body)
		return single(spec), nil
	}
	spec := EventSpec{
		// A trigger's body carries no id; the invocation stays the same
		// across Zendesk's retries.
		ProviderEventID: headerValue(r.Header, zendeskInvocationHeader),
		Type:            "zendesk.webhook",
		Kind:            intake.KindEvent,
	}
	spec.Data, spec.DataTruncated = bodyData(r.Body)
	return single(spec), nil
}
