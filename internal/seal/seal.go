// Package seal encrypts secrets at rest with AES-256-GCM under the master
// key, so a copy of the database alone reveals no signing secret.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// KeySize is the master key length: AES-256.
const KeySize = 32

// Sealer seals and opens secrets with one master key.
type Sealer struct {
	aead        cipher.AEAD
	fingerprint string
}

// New returns a Sealer for a 32-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("master key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, fingerprint: Fingerprint(key)}, nil
}

// Seal encrypts plaintext; the nonce travels in front of the ciphertext.
// additional binds the ciphertext to its row (e.g. the connection id), so a
// sealed value copied onto another row does not open.
func (s *Sealer) Seal(plaintext, additional []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return s.aead.Seal(nonce, nonce, plaintext, additional)
}

// Open decrypts what Seal produced.
func (s *Sealer) Open(sealed, additional []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed value too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], additional)
}

// SealSecrets seals a connection's list of signing secrets.
func (s *Sealer) SealSecrets(secrets []string, additional []byte) ([]byte, error) {
	raw, err := json.Marshal(secrets)
	if err != nil {
		return nil, err
	}
	return s.Seal(raw, additional), nil
}

// OpenSecrets opens what SealSecrets produced.
func (s *Sealer) OpenSecrets(sealed, additional []byte) ([][]byte, error) {
	raw, err := s.Open(sealed, additional)
	if err != nil {
		return nil, err
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	out := make([][]byte, len(list))
	for i, v := range list {
		out[i] = []byte(v)
	}
	return out, nil
}

// ParseKey decodes a master key given as 64 hex digits or standard base64.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if k, err := hex.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("master key must be %d bytes as hex or base64", KeySize)
}

// LoadOrCreateKey returns the key from env when set, else the one in path,
// generating it (mode 0600) on first start. created reports a new key.
func LoadOrCreateKey(env, path string) (key []byte, created bool, err error) {
	if env != "" {
		k, err := ParseKey(env)
		return k, false, err
	}
	if b, err := os.ReadFile(path); err == nil {
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		return k, false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, false, err
	}
	if err := WriteSecretFile(path, hex.EncodeToString(k)+"\n"); err != nil {
		return nil, false, err
	}
	return k, true, nil
}

// WriteSecretFile writes content to path with mode 0600, creating the
// directory, and never overwriting an existing file.
func WriteSecretFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ConnectionSecrets opens a connection's signing secrets, which are sealed
// to the connection's id; a connection without any has none.
func (s *Sealer) ConnectionSecrets(c intake.Connection) ([][]byte, error) {
	if len(c.SealedSecrets) == 0 {
		return nil, nil
	}
	return s.OpenSecrets(c.SealedSecrets, []byte(c.ID))
}

// SealConnectionSecrets seals a secret list to the connection it belongs to.
func (s *Sealer) SealConnectionSecrets(c intake.Connection, secrets []string) ([]byte, error) {
	return s.SealSecrets(secrets, []byte(c.ID))
}

// An org's notification secret and Slack URL are sealed to the org and to
// what they are, so neither opens as the other.
func notificationSecretAD(orgID string) []byte { return []byte("notifications.secret:" + orgID) }
func notificationSlackAD(orgID string) []byte  { return []byte("notifications.slack:" + orgID) }
func notificationURLAD(orgID string) []byte    { return []byte("notifications.url:" + orgID) }

// SealNotificationURL seals an org's notification URL that carries
// credentials.
func (s *Sealer) SealNotificationURL(orgID, url string) []byte {
	return s.Seal([]byte(url), notificationURLAD(orgID))
}

// NotificationURL is where an org's notifications are posted: its URL,
// opened from its sealed form when it carries credentials.
func (s *Sealer) NotificationURL(n intake.NotificationSettings) (string, error) {
	if len(n.SealedURL) == 0 {
		return n.URL, nil
	}
	b, err := s.Open(n.SealedURL, notificationURLAD(n.OrgID))
	return string(b), err
}

// SealNotificationSecret seals an org's notification signing secret.
func (s *Sealer) SealNotificationSecret(orgID, secret string) []byte {
	return s.Seal([]byte(secret), notificationSecretAD(orgID))
}

// SealNotificationSlackURL seals an org's Slack incoming-webhook URL (a
// credential); "" seals to nothing.
func (s *Sealer) SealNotificationSlackURL(orgID, url string) []byte {
	if url == "" {
		return nil
	}
	return s.Seal([]byte(url), notificationSlackAD(orgID))
}

// NotificationSecret opens an org's notification signing secret.
func (s *Sealer) NotificationSecret(n intake.NotificationSettings) (string, error) {
	b, err := s.Open(n.SealedSecret, notificationSecretAD(n.OrgID))
	return string(b), err
}

// NotificationSlackURL opens an org's Slack URL; "" when it has none.
func (s *Sealer) NotificationSlackURL(n intake.NotificationSettings) (string, error) {
	if len(n.SealedSlackURL) == 0 {
		return "", nil
	}
	b, err := s.Open(n.SealedSlackURL, notificationSlackAD(n.OrgID))
	return string(b), err
}

// consumerURLAD binds a consumer's sealed url to the consumer.
func consumerURLAD(consumerID string) []byte { return []byte(consumerID + "/url") }

// SealConsumerURL seals a consumer's whole url, which carries credentials
// (a broker's password).
func (s *Sealer) SealConsumerURL(consumerID, url string) []byte {
	return s.Seal([]byte(url), consumerURLAD(consumerID))
}

// ConsumerURL is where a consumer's events go: its url, opened from its
// sealed form when it carries credentials.
func (s *Sealer) ConsumerURL(c intake.Consumer) (string, error) {
	if len(c.SealedURL) == 0 {
		return c.URL, nil
	}
	b, err := s.Open(c.SealedURL, consumerURLAD(c.ID))
	return string(b), err
}

// ConsumerSecrets are a consumer's signing secrets at now, opened: the
// current one, and the one a rotation keeps beside it while it lasts.
func (s *Sealer) ConsumerSecrets(c intake.Consumer, now time.Time) ([]string, error) {
	secret, err := s.Open(c.SealedSecret, []byte(c.ID))
	if err != nil {
		return nil, err
	}
	out := []string{string(secret)}
	if c.SignsWithOld(now) {
		old, err := s.Open(c.SealedOldSecret, []byte(c.ID))
		if err != nil {
			return nil, err
		}
		out = append(out, string(old))
	}
	return out, nil
}
