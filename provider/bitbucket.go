package provider

import (
	"crypto/sha256"
	"strings"

	"github.com/intakehq/intake"
)

// bitbucketAdapter verifies Bitbucket Cloud and Data Center webhooks with a
// secret: X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body>
// (https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/#Secure-webhooks).
// Bitbucket signs no timestamp.
type bitbucketAdapter struct{}

func init() { Register(bitbucketAdapter{}) }

func (bitbucketAdapter) Name() string { return "bitbucket" }

func (bitbucketAdapter) ValidateConfig(Config) error { return nil }

func (bitbucketAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Hub-Signature")
	if header == "" {
		return sigError("bitbucket: X-Hub-Signature header missing")
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return sigError("bitbucket: X-Hub-Signature is not sha256=")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(hexSig), r.Body) {
		return nil
	}
	return sigError("bitbucket: no signature matches")
}

func (bitbucketAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	key := headerValue(r.Header, "X-Event-Key")
	if key == "" {
		return Interpretation{}, Permanent("bitbucket: X-Event-Key header missing")
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("bitbucket: body is not a JSON object: %v", err)
	}
	spec := EventSpec{
		// Cloud sends X-Request-UUID, Data Center X-Request-Id; both stay
		// the same when Bitbucket retries.
		ProviderEventID: headerValue(r.Header, "X-Request-UUID", "X-Request-Id"),
		// "repo:push" → bitbucket.repo.push, so consumers match bitbucket.repo.*
		Type: "bitbucket." + typeSegment(strings.ReplaceAll(key, ":", ".")),
		Kind: intake.KindEvent,
	}
	repo := firstOf(str(m, "repository", "uuid"), idString(lookup(m, "repository", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, repo)
	for _, pr := range []string{"pullrequest", "pullRequest"} {
		if id := idString(lookup(m, pr, "id")); id != "" && repo != "" {
			spec.ObjectIDs = appendID(spec.ObjectIDs, repo+"/pullrequests/"+id)
		}
	}
	spec.OccurredAt = unixTime(m["date"]) // Data Center; Cloud names no time
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
