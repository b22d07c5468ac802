package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sort"
	"strings"

	"github.com/intakehq/intake"
)

// twitterAdapter verifies X (Twitter) Account Activity API webhooks
// (https://docs.x.com/x-api/account-activity/introduction, "Securing
// webhooks"): x-twitter-webhooks-signature is "sha256=" and the base64
// HMAC-SHA256 of the body under the app's consumer secret. X checks the URL
// with a GET carrying crc_token, answered inline with {"response_token":
// "sha256=<base64 HMAC-SHA256 of crc_token under the consumer secret>"}, the
// first secret answering (put the new secret first when rotating). That
// answer is a MAC of text the caller chose, in the form of a delivery's
// signature, so it is given only for a token that can never be a delivery's
// body: letters, digits and -_=+/. , at most 256 of them (a delivery is a
// JSON object). A delivery holds events in one or more arrays by kind
// (tweet_create_events, favorite_events, follow_events,
// direct_message_events, …); each item is one event, typed
// twitter.<kind without _events>. X signs no time.
type twitterAdapter struct{}

func init() { Register(twitterAdapter{}) }

func (twitterAdapter) Name() string { return "twitter" }

func (twitterAdapter) ValidateConfig(Config) error { return nil }

// twitterCRC is the crc_token when r is X's challenge-response check.
func twitterCRC(r *Request) (string, bool) {
	if r.Method != http.MethodGet || r.Query == nil {
		return "", false
	}
	token := r.Query.Get("crc_token")
	return token, token != ""
}

// twitterTokenAnswerable reports whether a CRC token may be MACed: it can
// never be mistaken for a delivery's JSON body.
func twitterTokenAnswerable(token string) bool {
	if len(token) > 256 {
		return false
	}
	for _, c := range []byte(token) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_=+/.", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// Challenge answers the CRC check with the first secret's MAC of the token.
func (twitterAdapter) Challenge(r *Request, secrets [][]byte, _ Config) (Challenge, bool) {
	token, ok := twitterCRC(r)
	if !ok {
		return Challenge{}, false
	}
	if !twitterTokenAnswerable(token) {
		return Challenge{Status: http.StatusBadRequest, ContentType: "text/plain"}, true
	}
	for _, key := range secrets {
		if len(key) == 0 {
			continue
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(token))
		body, err := marshalJSON(map[string]string{"response_token": "sha256=" + base64.StdEncoding.EncodeToString(m.Sum(nil))})
		if err != nil {
			return Challenge{}, false
		}
		return Challenge{Status: http.StatusOK, ContentType: "application/json", Body: body}, true
	}
	return Challenge{Status: http.StatusServiceUnavailable, ContentType: "text/plain"}, true
}

func (twitterAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if _, ok := twitterCRC(r); ok {
		return nil // a handshake: it yields no events
	}
	header := headerValue(r.Header, "x-twitter-webhooks-signature")
	if header == "" {
		return sigError("twitter: x-twitter-webhooks-signature header missing")
	}
	b64, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return sigError("twitter: signature does not start with sha256=")
	}
	sig, err := decodeBase64Sig(b64)
	if err != nil {
		return sigError("twitter: signature is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("twitter: no signature matches")
}

// twitterItemID is the id an item carries for its kind, "" when none.
func twitterItemID(item map[string]any) string {
	for _, k := range []string{"id_str", "id"} {
		if id := idString(item[k]); id != "" {
			return id
		}
	}
	return ""
}

func (twitterAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if _, ok := twitterCRC(r); ok {
		return Interpretation{EventType: "twitter.crc", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("twitter: body is not a JSON object: %v", err)
	}
	user := idString(m["for_user_id"])
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var specs []EventSpec
	for _, key := range kinds {
		var items []map[string]any
		kind, isList := strings.CutSuffix(key, "_events")
		switch v := m[key].(type) {
		case []any:
			if !isList {
				continue
			}
			items = objects(m, key)
		case map[string]any:
			if key != "user_event" {
				continue
			}
			items = []map[string]any{v}
		default:
			continue
		}
		for _, item := range items {
			// The same tweet reaches each subscribed user it concerns:
			// the id names the user and the kind as well.
			id := joinID(user, kind, twitterItemID(item))
			if id == "" {
				id = itemDigest("twitter:", map[string]any{"for_user_id": user, kind: item})
			}
			spec := EventSpec{
				ProviderEventID: id,
				Type:            "twitter." + typeSegment(kind),
				Kind:            intake.KindEvent,
				OccurredAt:      firstTime(msTime(item["timestamp_ms"]), msTime(item["created_timestamp"])),
			}
			spec.ObjectIDs = appendID(spec.ObjectIDs, twitterItemID(item))
			spec.ObjectIDs = appendID(spec.ObjectIDs, user)
			spec.Data, spec.DataTruncated = itemData(item)
			specs = append(specs, spec)
		}
	}
	if len(specs) == 0 {
		return Interpretation{}, Permanent("twitter: the delivery holds no events")
	}
	return batch("twitter", "", specs), nil
}
