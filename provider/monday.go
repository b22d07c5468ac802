package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// mondayAdapter verifies monday.com webhooks
// (https://developer.monday.com/api-reference/reference/webhooks). A new
// webhook URL is first sent {"challenge":"…"}, which must be answered with
// the same JSON. Webhooks of a monday app carry an Authorization JWT,
// HS256 under the app's Signing Secret, whose exp and nbf are judged as
// jsonwebtoken's verify judges them; the JWT does not cover the body.
// Webhooks made on a board carry nothing to verify: they are accepted only
// when the connection's config says "unsigned": true.
type mondayAdapter struct{}

func init() { Register(mondayAdapter{}) }

func (mondayAdapter) Name() string { return "monday" }

func (mondayAdapter) ValidateConfig(cfg Config) error {
	_, err := boolSetting(cfg, "unsigned")
	return err
}

// mondayChallenge is the challenge value when r is monday's URL check: a
// body holding nothing but a challenge string.
func mondayChallenge(r *Request) (string, bool) {
	if r.Method != http.MethodPost || !isJSONBody(r.Body) {
		return "", false
	}
	m, err := decodeObject(r.Body)
	if err != nil || len(m) != 1 {
		return "", false
	}
	c, ok := m["challenge"].(string)
	return c, ok
}

// Challenge echoes the challenge, as monday asks, as JSON.
func (mondayAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	c, ok := mondayChallenge(r)
	if !ok {
		return Challenge{}, false
	}
	body, err := marshalJSON(map[string]string{"challenge": c})
	if err != nil {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "application/json", Body: body}, true
}

func (mondayAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	unsigned, err := boolSetting(cfg, "unsigned")
	if err != nil {
		return configError("monday", err)
	}
	if _, ok := mondayChallenge(r); ok {
		return nil // a handshake: it yields no events
	}
	token := strings.TrimSpace(headerValue(r.Header, "Authorization"))
	if token == "" {
		if unsigned {
			return nil
		}
		return sigError("monday: Authorization header missing (a board webhook is unsigned; set unsigned to accept it)")
	}
	if t, ok := strings.CutPrefix(token, "Bearer "); ok {
		token = strings.TrimSpace(t)
	}
	return verifyHS256JWT("monday", token, secrets, r.ReceivedAt)
}

// verifyHS256JWT checks a compact JWT signed HS256 with one of secrets, and
// its exp and nbf against the received time (no leeway).
func verifyHS256JWT(name, token string, secrets [][]byte, receivedAt time.Time) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return sigError("%s: Authorization is not a JWT", name)
	}
	var header struct {
		Alg string `json:"alg"`
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(rawHeader, &header) != nil || header.Alg != "HS256" {
		return sigError("%s: JWT is not HS256", name)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return sigError("%s: JWT signature is not base64url", name)
	}
	if !anyKeySigned(sha256.New, secrets, [][]byte{sig}, []byte(parts[0]+"."+parts[1])) {
		return sigError("%s: no secret signed the JWT", name)
	}
	rawClaims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return sigError("%s: JWT claims are not base64url", name)
	}
	claims, err := decodeObject(rawClaims)
	if err != nil {
		return sigError("%s: JWT claims are not a JSON object", name)
	}
	for _, c := range []string{"exp", "nbf"} {
		v, ok := claims[c]
		if !ok {
			continue
		}
		n, isNum := v.(json.Number)
		sec, err := n.Float64()
		if !isNum || err != nil {
			return sigError("%s: JWT %s is not a number", name, c)
		}
		at := time.Unix(0, int64(sec*float64(time.Second)))
		if c == "exp" && !receivedAt.Before(at) {
			return sigError("%s: JWT expired %s before receipt", name, receivedAt.Sub(at).Round(time.Second))
		}
		if c == "nbf" && receivedAt.Before(at) {
			return sigError("%s: JWT not valid until %s after receipt", name, at.Sub(receivedAt).Round(time.Second))
		}
	}
	return nil
}

func (mondayAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if _, ok := mondayChallenge(r); ok {
		return Interpretation{EventType: "monday.challenge", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("monday: body is not a JSON object: %v", err)
	}
	ev, _ := m["event"].(map[string]any)
	typ := str(ev, "type")
	if typ == "" {
		return Interpretation{}, Permanent("monday: body has no event type")
	}
	spec := EventSpec{
		// triggerUuid names the trigger; monday's retries repeat it.
		ProviderEventID: str(ev, "triggerUuid"),
		Type:            "monday." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(ev["triggerTime"]),
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("monday:", ev)
	}
	for _, f := range []string{"pulseId", "itemId", "boardId"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(ev[f]))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
