package provider

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/intakehq/intake"
)

// standardAdapter verifies Standard Webhooks (standardwebhooks.com), which
// Svix also sends under svix-* header names.
type standardAdapter struct{}

func init() { Register(standardAdapter{}) }

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

func (standardAdapter) Name() string { return "standard" }

func (standardAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (standardAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("standard", err)
	}
	id := headerValue(r.Header, standardIDHeaders...)
	ts := headerValue(r.Header, standardTimestampHeaders...)
	sigHeader := headerValue(r.Header, standardSignatureHeaders...)
	switch {
	case id == "":
		return sigError("standard: webhook-id header missing")
	case ts == "":
		return sigError("standard: webhook-timestamp header missing")
	case sigHeader == "":
		return sigError("standard: webhook-signature header missing")
	}
	if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
		return fmt.Errorf("standard: %w", err)
	}

	var macs, edSigs [][]byte
	for _, versioned := range strings.Split(sigHeader, " ") {
		version, b64, ok := strings.Cut(versioned, ",")
		if !ok {
			continue
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
		return sigError("standard: no v1 or v1a signature in webhook-signature")
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
	return sigError("standard: no signature matches")
}

func (standardAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("standard: body is not a JSON object: %v", err)
	}
	typ := "standard.message"
	if t := str(m, "type"); t != "" {
		typ = "standard." + typeSegment(t)
	}
	spec := EventSpec{
		ProviderEventID: headerValue(r.Header, standardIDHeaders...),
		Type:            typ,
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["timestamp"]),
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
