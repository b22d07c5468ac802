package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"strings"

	"github.com/intakehq/intake"
)

// jiraAdapter verifies Jira Cloud admin webhooks registered with a secret:
// X-Hub-Signature: <method>=<hex HMAC of the body>, the WebSub format, where
// Jira uses sha256 (https://developer.atlassian.com/cloud/jira/platform/webhooks/#secure-admin-webhooks).
// Jira signs no timestamp.
type jiraAdapter struct{}

func init() { Register(jiraAdapter{}) }

// jiraMethods are the WebSub signature methods.
var jiraMethods = map[string]func() hash.Hash{
	"sha1": sha1.New, "sha256": sha256.New, "sha384": sha512.New384, "sha512": sha512.New,
}

func (jiraAdapter) Name() string { return "jira" }

func (jiraAdapter) ValidateConfig(Config) error { return nil }

func (jiraAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Hub-Signature")
	if header == "" {
		return sigError("jira: X-Hub-Signature header missing")
	}
	method, hexSig, _ := strings.Cut(header, "=")
	h := jiraMethods[method]
	if h == nil {
		return sigError("jira: X-Hub-Signature method is not sha1, sha256, sha384 or sha512")
	}
	if anyKeySigned(h, secrets, decodeHexSigs(hexSig), r.Body) {
		return nil
	}
	return sigError("jira: no signature matches")
}

func (jiraAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("jira: body is not a JSON object: %v", err)
	}
	event := str(m, "webhookEvent")
	if event == "" {
		return Interpretation{}, Permanent("jira: body has no webhookEvent")
	}
	spec := EventSpec{
		// Unique within the site and unchanged across retries.
		ProviderEventID: headerValue(r.Header, "X-Atlassian-Webhook-Identifier"),
		// "jira:issue_updated" → jira.issue_updated; "comment_created" → jira.comment_created
		Type:       "jira." + typeSegment(strings.TrimPrefix(event, "jira:")),
		Kind:       intake.KindEvent,
		OccurredAt: msTime(m["timestamp"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "issue", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "issue", "key"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "project", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
