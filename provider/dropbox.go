package provider

import (
	"crypto/sha256"
	"net/http"

	"github.com/intakehq/intake"
)

// dropboxAdapter verifies Dropbox webhooks
// (https://www.dropbox.com/developers/reference/webhooks): a GET with a
// challenge parameter is answered by echoing it; notifications carry
// X-Dropbox-Signature, the hex HMAC-SHA256 of the body under the app
// secret. A notification only says which accounts changed, so each account
// becomes a change notice. Dropbox signs no timestamp.
type dropboxAdapter struct{}

func init() { Register(dropboxAdapter{}) }

func (dropboxAdapter) Name() string { return "dropbox" }

func (dropboxAdapter) ValidateConfig(Config) error { return nil }

// dropboxChallenge is the verification request's challenge, "" for others.
func dropboxChallenge(r *Request) string {
	if r.Method != http.MethodGet {
		return ""
	}
	return r.Query.Get("challenge")
}

// Challenge echoes the verification request's challenge, as plain text that
// a browser will not sniff into markup, as Dropbox's docs ask.
func (dropboxAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	c := dropboxChallenge(r)
	if c == "" {
		return Challenge{}, false
	}
	return Challenge{
		Status:      http.StatusOK,
		ContentType: "text/plain",
		Header:      http.Header{"X-Content-Type-Options": {"nosniff"}},
		Body:        []byte(c),
	}, true
}

func (dropboxAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if dropboxChallenge(r) != "" {
		return nil // a handshake: it yields no events
	}
	header := headerValue(r.Header, "X-Dropbox-Signature")
	if header == "" {
		return sigError("dropbox: X-Dropbox-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("dropbox: no signature matches")
}

func (dropboxAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if dropboxChallenge(r) != "" {
		return Interpretation{EventType: "dropbox.challenge", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("dropbox: body is not a JSON object: %v", err)
	}
	accounts, _ := lookup(m, "list_folder", "accounts").([]any)
	var specs []EventSpec
	seen := map[string]bool{}
	for _, a := range accounts {
		account, _ := a.(string)
		if account == "" || seen[account] {
			continue
		}
		seen[account] = true
		spec := EventSpec{Type: "dropbox.list_folder", Kind: intake.KindChangeNotice, ObjectIDs: []string{account}}
		spec.Data, spec.DataTruncated = itemData(map[string]string{"account": account})
		specs = append(specs, spec)
	}
	return batch("dropbox", "", specs), nil
}
