package provider

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/intakehq/intake"
)

// sendgridAdapter verifies SendGrid's signed Event Webhook
// (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features):
// X-Twilio-Email-Event-Webhook-Signature is a base64 DER ECDSA P-256
// signature of SHA-256(X-Twilio-Email-Event-Webhook-Timestamp + body); the
// secret is the verification key, the base64 DER public key the dashboard
// shows. SendGrid documents no tolerance, so the timestamp is judged only
// when config tolerance is set; each item's sg_event_id stops replays of
// what was already accepted. A delivery is a batch: one event per item.
type sendgridAdapter struct{}

func init() { Register(sendgridAdapter{}) }

const (
	sendgridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	sendgridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

func (sendgridAdapter) Name() string { return "sendgrid" }

func (sendgridAdapter) ValidateConfig(cfg Config) error {
	if _, ok := cfg["tolerance"]; ok {
		_, err := toleranceSetting(cfg, defaultTolerance)
		return err
	}
	return nil
}

func (sendgridAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	header := headerValue(r.Header, sendgridSignatureHeader)
	ts := headerValue(r.Header, sendgridTimestampHeader)
	switch {
	case header == "":
		return sigError("sendgrid: %s header missing", sendgridSignatureHeader)
	case ts == "":
		return sigError("sendgrid: %s header missing", sendgridTimestampHeader)
	}
	if _, ok := cfg["tolerance"]; ok {
		tolerance, err := toleranceSetting(cfg, defaultTolerance)
		if err != nil {
			return configError("sendgrid", err)
		}
		if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
			return fmt.Errorf("sendgrid: %w", err)
		}
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(header))
	if err != nil {
		return sigError("sendgrid: signature is not base64")
	}
	digest := sha256.Sum256(append([]byte(ts), r.Body...))
	for _, secret := range secrets {
		pub := sendgridKey(secret)
		if pub != nil && ecdsa.VerifyASN1(pub, digest[:], sig) {
			return nil
		}
	}
	return sigError("sendgrid: no verification key accepts the signature")
}

// sendgridKey parses a verification key (base64 DER, optionally wrapped in a
// PEM armour); nil when it is not an ECDSA public key.
func sendgridKey(secret []byte) *ecdsa.PublicKey {
	s := strings.TrimSpace(string(secret))
	s = strings.TrimPrefix(s, "-----BEGIN PUBLIC KEY-----")
	s = strings.TrimSuffix(s, "-----END PUBLIC KEY-----")
	der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return nil
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil
	}
	pub, _ := key.(*ecdsa.PublicKey)
	return pub
}

func (sendgridAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	items, err := decodeArray(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("sendgrid: body is not a JSON array of events: %v", err)
	}
	specs := make([]EventSpec, 0, len(items))
	for _, item := range items {
		event := str(item, "event")
		if event == "" {
			return Interpretation{}, Permanent("sendgrid: an event has no event field")
		}
		spec := EventSpec{
			ProviderEventID: firstOf(str(item, "sg_event_id"), itemDigest("sendgrid:", item)),
			Type:            "sendgrid." + typeSegment(event),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(item["timestamp"]),
		}
		// sg_message_id is "<X-Message-Id>.filter…"; an app knows the
		// X-Message-Id its send returned.
		if msg := str(item, "sg_message_id"); msg != "" {
			spec.ObjectIDs = appendID(spec.ObjectIDs, msg)
			if prefix, _, ok := strings.Cut(msg, ".filter"); ok {
				spec.ObjectIDs = appendID(spec.ObjectIDs, prefix)
			}
		}
		spec.Data, spec.DataTruncated = itemData(item)
		specs = append(specs, spec)
	}
	return batch("sendgrid", "", specs), nil
}
