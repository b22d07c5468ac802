package provider

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/intakehq/intake"
)

// Limits on a connection's signing secrets: generous for any provider,
// small enough to refuse a paste of the wrong file.
const (
	MaxSecrets      = 10
	MaxSecretLength = 4096
)

// CheckSecrets is the one rule for a connection's list of signing secrets,
// for the API and the console alike: none for the provider that verifies
// nothing; at least one for the others, except those that hand their secret
// over in a handshake (it is adopted later) and those that sign with keys
// of their own; never more than MaxSecrets.
func CheckSecrets(providerName string, secrets []string) error {
	if providerName == "none" {
		if len(secrets) > 0 {
			return intake.Errorf(intake.EINVALID, "provider none verifies nothing and takes no secrets")
		}
		return nil
	}
	if len(secrets) == 0 {
		if a, ok := Lookup(providerName); ok {
			if _, fromHandshake := a.(HandshakeSecreter); fromHandshake {
				return nil
			}
			if _, ownKeys := a.(OwnKeysSigner); ownKeys {
				return nil
			}
		}
		return intake.Errorf(intake.EINVALID, "provider %s needs at least one signing secret", providerName)
	}
	if len(secrets) > MaxSecrets {
		return intake.Errorf(intake.EINVALID, "at most %d secrets may be active at once", MaxSecrets)
	}
	for i, v := range secrets {
		if strings.TrimSpace(v) == "" {
			return intake.Errorf(intake.EINVALID, "secrets[%d] is empty", i)
		}
		if len(v) > MaxSecretLength {
			return intake.Errorf(intake.EINVALID, "secrets[%d] is longer than %d bytes", i, MaxSecretLength)
		}
	}
	return nil
}

// CheckConfig is the one rule for a connection's provider settings, for the
// API and the console alike: a JSON object (absent or null: {}) that the
// adapter accepts. It returns the settings compacted.
func CheckConfig(a Adapter, raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return nil, intake.Errorf(intake.EINVALID, "config must be a JSON object")
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return nil, intake.Errorf(intake.EINVALID, "%v", err)
	}
	if err := a.ValidateConfig(cfg); err != nil {
		return nil, intake.Errorf(intake.EINVALID, "config for %s: %v", a.Name(), err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, intake.Errorf(intake.EINVALID, "config: %v", err)
	}
	return buf.Bytes(), nil
}
