package provider

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// standardAdapter verifies Standard Webhooks (standardwebhooks.com), which
// Svix also sends under svix-* header names. The svix, clerk and resend codes
// are the same scheme under the provider's own name, reading the ids of the
// objects their payloads carry.
type standardAdapter struct {
	name        string
	objectPaths [][]string // where the payload names provider objects
}

func init() {
	Register(standardAdapter{name: "standard"})
	Register(standardAdapter{name: "svix", objectPaths: [][]string{{"data", "id"}}})
	// Clerk: {"type":"user.created","data":{"id":"user_…"},…}
	// (https://clerk.com/docs/webhooks/overview).
	Register(standardAdapter{name: "clerk", objectPaths: [][]string{{"data", "id"}}})
	// Resend: {"type":"email.sent","data":{"email_id":"…"},…}
	// (https://resend.com/docs/dashboard/webhooks/event-types).
	Register(standardAdapter{name: "resend", objectPaths: [][]string{{"data", "email_id"}, {"data", "id"}}})
}

// Standard Webhooks headers, each with its Svix alias.
var (
	standardIDHeaders        = []string{"webhook-id", "svix-id"}
	standardTimestampHeaders = []string{"webhook-timestamp", "svix-timestamp"}
	standardSignatureHeaders = []string{"webhook-signature", "svix-signature"}
)

// Secret prefixes: a symmetric HMAC key, or an Ed25519 public key.
const (
	standardSecretPrefix    = "whsec_"
	standardPublicKeyPrefix = "whpk_"
)

// standardB64 is strict so that one signature has one encoding.
var standardB64 = base64.StdEncoding.Strict()

func (a standardAdapter) Name() string { return a.name }

func (standardAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (a standardAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError(a.name, err)
	}
	if err := verifyStandard(r, secrets, tolerance, false); err != nil {
		return fmt.Errorf("%s: %w", a.name, err)
	}
	return nil
}

// verifyStandard checks a Standard Webhooks signature; GitLab's signing token
// uses it too. With bare, a signature written without its version (no
// comma) is read as v1, as OpenAI's SDKs read it.
func verifyStandard(r *Request, secrets [][]byte, tolerance time.Duration, bare bool) error {
	id := headerValue(r.Header, standardIDHeaders...)
	ts := headerValue(r.Header, standardTimestampHeaders...)
	sigHeader := headerValue(r.Header, standardSignatureHeaders...)
	switch {
	case id == "":
		return sigError("webhook-id header missing")
	case ts == "":
		return sigError("webhook-timestamp header missing")
	case sigHeader == "":
		return sigError("webhook-signature header missing")
	}
	if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
		return err
	}

	var macs, edSigs [][]byte
	for _, versioned := range strings.Split(sigHeader, " ") {
		version, b64, ok := strings.Cut(versioned, ",")
		if !ok {
			if !bare {
				continue
			}
			version, b64 = "v1", versioned
		}
		sig, err := standardB64.DecodeString(b64)
		if err != nil {
			continue
		}
		switch version {
		case "v1":
			macs = append(macs, sig)
		case "v1a":
			edSigs = append(edSigs, sig)
		}
	}
	if len(macs) == 0 && len(edSigs) == 0 {
		return sigError("no v1 or v1a signature in webhook-signature")
	}

	content := []byte(id + "." + ts + "." + string(r.Body))
	var hmacKeys [][]byte
	for _, secret := range secrets {
		s := string(secret)
		if strings.HasPrefix(s, standardPublicKeyPrefix) {
			pub, err := standardB64.DecodeString(strings.TrimPrefix(s, standardPublicKeyPrefix))
			if err != nil || len(pub) != ed25519.PublicKeySize {
				continue
			}
			for _, sig := range edSigs {
				if len(sig) == ed25519.SignatureSize && ed25519.Verify(pub, content, sig) {
					return nil
				}
			}
			continue
		}
		// Like the spec's libraries, a secret without the prefix is still
		// the base64 of the key.
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, standardSecretPrefix))
		if err != nil {
			continue
		}
		hmacKeys = append(hmacKeys, key)
	}
	if anyKeySigned(sha256.New, hmacKeys, macs, content) {
		return nil
	}
	return sigError("no signature matches")
}

func (a standardAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("%s: body is not a JSON object: %v", a.name, err)
	}
	typ := a.name + ".message"
	if t := str(m, "type"); t != "" {
		typ = a.name + "." + typeSegment(t)
	}
	spec := EventSpec{
		ProviderEventID: headerValue(r.Header, standardIDHeaders...),
		Type:            typ,
		Kind:            intake.KindEvent,
		OccurredAt:      firstTime(unixTime(m["timestamp"]), msTime(m["timestamp"]), unixTime(m["created_at"])),
	}
	for _, path := range a.objectPaths {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, path...)))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
