package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// hmacAdapter verifies providers outside the catalog that sign with an HMAC,
// as the connection's config describes:
//
//	header            signature header (required), e.g. "X-Signature"
//	algorithm         sha1 | sha256 (default) | sha512
//	encoding          hex (default) | base64
//	prefix            text before the signature, e.g. "sha256="
//	signed            body (default) | timestamp.body, which signs "{ts}.{body}"
//	timestamp_header  required with timestamp.body; "tolerance" then applies
//	id_header | id_field      where the event id is (a header, or a top-level JSON field)
//	type_header | type_field  where the event type is; events are "hmac.<type>"
type hmacAdapter struct{}

func init() { Register(hmacAdapter{}) }

// hmacScheme is a validated generic HMAC configuration.
type hmacScheme struct {
	header          string
	hash            func() hash.Hash
	encoding        string
	prefix          string
	timestampHeader string // empty when only the body is signed
	tolerance       time.Duration
	fields          idTypeFields
}

var hmacAlgorithms = map[string]func() hash.Hash{
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha512": sha512.New,
}

func parseHMACScheme(cfg Config) (hmacScheme, error) {
	var s hmacScheme
	var err error
	get := func(key, def string) string {
		v, e := stringSetting(cfg, key)
		if e != nil && err == nil {
			err = e
		}
		if v == "" {
			return def
		}
		return v
	}
	s.header = get("header", "")
	algorithm := strings.ToLower(get("algorithm", "sha256"))
	s.encoding = strings.ToLower(get("encoding", "hex"))
	s.prefix = get("prefix", "")
	signed := get("signed", "body")
	s.timestampHeader = get("timestamp_header", "")
	if err != nil {
		return hmacScheme{}, err
	}
	if s.header == "" {
		return hmacScheme{}, errors.New("config header: required")
	}
	if s.hash = hmacAlgorithms[algorithm]; s.hash == nil {
		return hmacScheme{}, fmt.Errorf("config algorithm: want sha1, sha256 or sha512, not %q", algorithm)
	}
	if s.encoding != "hex" && s.encoding != "base64" {
		return hmacScheme{}, fmt.Errorf("config encoding: want hex or base64, not %q", s.encoding)
	}
	switch signed {
	case "body":
		if s.timestampHeader != "" {
			return hmacScheme{}, errors.New("config timestamp_header: only with signed timestamp.body")
		}
	case "timestamp.body":
		if s.timestampHeader == "" {
			return hmacScheme{}, errors.New("config timestamp_header: required with signed timestamp.body")
		}
		if s.tolerance, err = toleranceSetting(cfg, defaultTolerance); err != nil {
			return hmacScheme{}, err
		}
	default:
		return hmacScheme{}, fmt.Errorf("config signed: want body or timestamp.body, not %q", signed)
	}
	if s.fields, err = parseIDTypeFields(cfg); err != nil {
		return hmacScheme{}, err
	}
	return s, nil
}

func (hmacAdapter) Name() string { return "hmac" }

func (hmacAdapter) ValidateConfig(cfg Config) error {
	_, err := parseHMACScheme(cfg)
	return err
}

func (hmacAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	s, err := parseHMACScheme(cfg)
	if err != nil {
		return configError("hmac", err)
	}
	value := headerValue(r.Header, s.header)
	if value == "" {
		return sigError("hmac: signature header missing")
	}
	if s.prefix != "" {
		if len(value) < len(s.prefix) || !strings.EqualFold(value[:len(s.prefix)], s.prefix) {
			return sigError("hmac: signature lacks the configured prefix")
		}
		value = value[len(s.prefix):]
	}
	sig, err := s.decode(value)
	if err != nil {
		return sigError("hmac: signature is not %s", s.encoding)
	}
	parts := [][]byte{r.Body}
	if s.timestampHeader != "" {
		ts := headerValue(r.Header, s.timestampHeader)
		if ts == "" {
			return sigError("hmac: timestamp header missing")
		}
		if err := checkTimestamp(ts, r.ReceivedAt, s.tolerance); err != nil {
			return fmt.Errorf("hmac: %w", err)
		}
		parts = [][]byte{[]byte(ts), []byte("."), r.Body}
	}
	if anyKeySigned(s.hash, secrets, [][]byte{sig}, parts...) {
		return nil
	}
	return sigError("hmac: no signature matches")
}

// decode reads a signature; base64 may come with or without padding.
func (s hmacScheme) decode(v string) ([]byte, error) {
	if s.encoding == "hex" {
		return hex.DecodeString(v)
	}
	return base64.RawStdEncoding.Strict().DecodeString(strings.TrimRight(v, "="))
}

func (hmacAdapter) Interpret(r *Request, cfg Config) (Interpretation, error) {
	s, err := parseHMACScheme(cfg)
	if err != nil {
		return Interpretation{}, configError("hmac", err)
	}
	return s.fields.interpret("hmac", r)
}

// idTypeFields says where a generic adapter finds a message's event id and
// type.
type idTypeFields struct {
	idHeader, idField, typeHeader, typeField string
}

func parseIDTypeFields(cfg Config) (idTypeFields, error) {
	var f idTypeFields
	for key, dst := range map[string]*string{
		"id_header": &f.idHeader, "id_field": &f.idField,
		"type_header": &f.typeHeader, "type_field": &f.typeField,
	} {
		v, err := stringSetting(cfg, key)
		if err != nil {
			return idTypeFields{}, err
		}
		*dst = v
	}
	if f.idHeader != "" && f.idField != "" {
		return idTypeFields{}, errors.New("config: set id_header or id_field, not both")
	}
	if f.typeHeader != "" && f.typeField != "" {
		return idTypeFields{}, errors.New("config: set type_header or type_field, not both")
	}
	return f, nil
}

// interpret reads one event. The body must be a JSON object only when a
// field is configured; any other body is kept for consumers as the raw body.
// Without an id the message is deduplicated by its body digest.
func (f idTypeFields) interpret(provider string, r *Request) (Interpretation, error) {
	var m map[string]any
	if f.idField != "" || f.typeField != "" {
		var err error
		if m, err = topFields(r.Body, f.idField, f.typeField); err != nil {
			return Interpretation{}, Permanent("%s: body is not a JSON object: %v", provider, err)
		}
	}
	spec := EventSpec{Type: provider + ".message", Kind: intake.KindEvent}
	switch {
	case f.idHeader != "":
		spec.ProviderEventID = headerValue(r.Header, f.idHeader)
	case f.idField != "":
		spec.ProviderEventID = idString(m[f.idField])
	}
	var typ string
	switch {
	case f.typeHeader != "":
		typ = headerValue(r.Header, f.typeHeader)
	case f.typeField != "":
		typ = str(m, f.typeField)
	}
	if typ != "" {
		spec.Type = provider + "." + typeSegment(typ)
	}
	spec.Data, spec.DataTruncated = bodyData(r.Body)
	return single(spec), nil
}
