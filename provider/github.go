package provider

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/url"
	"strings"

	"github.com/intakehq/intake"
)

// githubAdapter verifies GitHub webhook deliveries
// (https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries).
// GitHub signs no timestamp; its delivery id deduplicates retries.
type githubAdapter struct{}

func init() { Register(githubAdapter{}) }

func (githubAdapter) Name() string { return "github" }

func (githubAdapter) ValidateConfig(cfg Config) error {
	_, err := boolSetting(cfg, "allow_sha1")
	return err
}

func (githubAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	allowSHA1, err := boolSetting(cfg, "allow_sha1")
	if err != nil {
		return configError("github", err)
	}
	if h := headerValue(r.Header, "X-Hub-Signature-256"); h != "" {
		return verifyGitHub(h, "sha256=", sha256.New, secrets, r.Body)
	}
	// SHA-1 only for old GitHub Enterprise servers, and only when asked.
	if allowSHA1 {
		if h := headerValue(r.Header, "X-Hub-Signature"); h != "" {
			return verifyGitHub(h, "sha1=", sha1.New, secrets, r.Body)
		}
	}
	return sigError("github: X-Hub-Signature-256 header missing")
}

func verifyGitHub(header, prefix string, h func() hash.Hash, secrets [][]byte, body []byte) error {
	hexSig, ok := strings.CutPrefix(header, prefix)
	if !ok {
		return sigError("github: signature header lacks %s", prefix)
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil {
		return sigError("github: signature is not hex")
	}
	if anyKeySigned(h, secrets, [][]byte{sig}, body) {
		return nil
	}
	return sigError("github: no signature matches")
}

func (githubAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	event := headerValue(r.Header, "X-GitHub-Event")
	if event == "" {
		return Interpretation{}, Permanent("github: X-GitHub-Event header missing")
	}
	payload := githubPayload(r.Body)
	m, err := decodeObject(payload)
	if err != nil {
		return Interpretation{}, Permanent("github: payload is not a JSON object: %v", err)
	}
	typ := "github." + typeSegment(event)
	if action := str(m, "action"); action != "" {
		typ += "." + typeSegment(action)
	}
	spec := EventSpec{
		ProviderEventID: headerValue(r.Header, "X-GitHub-Delivery"),
		Type:            typ,
		Kind:            intake.KindEvent,
	}
	for _, obj := range []string{"repository", "pull_request", "issue"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, obj, "node_id"))
	}
	spec.Data, spec.DataTruncated = eventData(payload)
	return single(spec), nil
}

// githubPayload is the JSON of a delivery: the body itself, or its payload
// field when the webhook is set to application/x-www-form-urlencoded.
func githubPayload(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return body
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || !form.Has("payload") {
		return body
	}
	return []byte(form.Get("payload"))
}
