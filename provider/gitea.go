package provider

import (
	"crypto/sha256"
	"net/http"
	"net/url"

	"github.com/intakehq/intake"
)

// giteaAdapter verifies Gitea webhooks: X-Gitea-Signature is the hex
// HMAC-SHA256 of the JSON payload under the webhook's secret
// (https://docs.gitea.com/usage/webhooks; go-gitea/gitea,
// services/webhook/deliver.go). Gitea signs the payload, not the request
// body: a form-encoded webhook carries it in the payload field, a GET one in
// the payload query parameter. Gitea signs no timestamp.
type giteaAdapter struct{}

func init() { Register(giteaAdapter{}) }

func (giteaAdapter) Name() string { return "gitea" }

func (giteaAdapter) ValidateConfig(Config) error { return nil }

func (giteaAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Gitea-Signature")
	if header == "" {
		return sigError("gitea: X-Gitea-Signature header missing")
	}
	payload := giteaPayload(r)
	if payload == nil {
		return sigError("gitea: request carries no payload")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), payload) {
		return nil
	}
	return sigError("gitea: no signature matches")
}

// giteaPayload is the JSON Gitea signed, wherever the webhook's method and
// content type put it; nil when there is none.
func giteaPayload(r *Request) []byte {
	if r.Method == http.MethodGet {
		if p := r.Query.Get("payload"); p != "" {
			return []byte(p)
		}
		return nil
	}
	if isJSONBody(r.Body) {
		return r.Body
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil || form.Get("payload") == "" {
		return nil
	}
	return []byte(form.Get("payload"))
}

func (giteaAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	// X-Gitea-Event is the GitHub-compatible name; Gitea leaves it empty
	// for events GitHub has no name for, and X-Gitea-Event-Type names them.
	event := headerValue(r.Header, "X-Gitea-Event", "X-Gitea-Event-Type")
	if event == "" {
		return Interpretation{}, Permanent("gitea: X-Gitea-Event header missing")
	}
	payload := giteaPayload(r)
	m, err := decodeObject(payload)
	if err != nil {
		return Interpretation{}, Permanent("gitea: payload is not a JSON object: %v", err)
	}
	typ := "gitea." + typeSegment(event)
	if action := str(m, "action"); action != "" {
		typ += "." + typeSegment(action)
	}
	spec := EventSpec{
		// Gitea does not retry a failed delivery; a redelivery from its UI
		// is a new hook task with a new X-Gitea-Delivery.
		ProviderEventID: headerValue(r.Header, "X-Gitea-Delivery"),
		Type:            typ,
		Kind:            intake.KindEvent,
	}
	// Numeric ids repeat across repositories, issues and pull requests; the
	// html_url the API returns on creation names each one alone.
	for _, obj := range []string{"repository", "pull_request", "issue"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, obj, "html_url"))
	}
	spec.Data, spec.DataTruncated = eventData(payload)
	return single(spec), nil
}
