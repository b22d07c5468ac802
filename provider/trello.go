package provider

import (
	"bytes"
	"crypto/sha1"
	"net/http"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/intakehq/intake"
)

// trelloAdapter verifies Trello webhooks
// (https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/):
// X-Trello-Webhook is the base64 HMAC-SHA1, under the application's OAuth
// secret, of the body followed by the callbackURL exactly as it was given
// when the webhook was created, which is the public URL. Trello creates a
// webhook only after a HEAD to that URL is answered 200; that check is a
// handshake. Trello signs no timestamp.
type trelloAdapter struct{}

func init() { Register(trelloAdapter{}) }

func (trelloAdapter) Name() string { return "trello" }

func (trelloAdapter) ValidateConfig(Config) error { return nil }

// trelloHeadCheck reports whether r is the check Trello makes before it
// creates a webhook.
func trelloHeadCheck(r *Request) bool { return r.Method == http.MethodHead }

// Challenge answers the HEAD check with 200, which is all Trello asks.
func (trelloAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	if !trelloHeadCheck(r) {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain"}, true
}

func (trelloAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if trelloHeadCheck(r) {
		return nil // a handshake: it yields no events
	}
	header := headerValue(r.Header, "X-Trello-Webhook")
	if header == "" {
		return sigError("trello: X-Trello-Webhook header missing")
	}
	if r.URL == "" {
		return sigError("trello: the public URL is unknown")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("trello: signature is not base64")
	}
	content := append(bytes.Clone(r.Body), r.URL...)
	// Trello's docs say it signs the text as Node's "binary" strings: each
	// UTF-16 unit cut to its low byte. For ASCII that is the text itself;
	// the UTF-8 bytes are tried too, should Trello ever sign those.
	if anyKeySigned(sha1.New, secrets, [][]byte{sig}, nodeBinary(content)) ||
		anyKeySigned(sha1.New, secrets, [][]byte{sig}, content) {
		return nil
	}
	return sigError("trello: no signature matches")
}

// nodeBinary is UTF-8 text as Node's "binary" (latin1) encoding writes it:
// the low byte of each UTF-16 code unit. Invalid bytes read as U+FFFD, as
// Node decodes them.
func nodeBinary(text []byte) []byte {
	out := make([]byte, 0, len(text))
	for len(text) > 0 {
		r, n := utf8.DecodeRune(text)
		text = text[n:]
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			out = append(out, byte(r1), byte(r2))
			continue
		}
		out = append(out, byte(r))
	}
	return out
}

func (trelloAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if trelloHeadCheck(r) {
		return Interpretation{EventType: "trello.challenge", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("trello: body is not a JSON object: %v", err)
	}
	typ := str(m, "action", "type")
	if typ == "" {
		return Interpretation{}, Permanent("trello: body has no action type")
	}
	spec := EventSpec{
		// The action's id: Trello retries the same action.
		ProviderEventID: idString(lookup(m, "action", "id")),
		Type:            "trello." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(lookup(m, "action", "date")),
	}
	for _, path := range [][]string{{"action", "data", "card", "id"}, {"action", "data", "board", "id"}, {"model", "id"}} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, path...)))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
