package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/intakehq/intake"
)

// netlifyAdapter verifies Netlify outgoing webhooks (deploy notifications
// and form submissions) signed with a JWS secret token
// (https://docs.netlify.com/site-deploys/deploy-notifications/#payload-signature):
// X-Webhook-Signature is a JWS, HS256 under the secret, whose claims are
// iss "netlify" and sha256, the hex SHA-256 of the body. Netlify signs no
// time.
type netlifyAdapter struct{}

func init() { Register(netlifyAdapter{}) }

func (netlifyAdapter) Name() string { return "netlify" }

func (netlifyAdapter) ValidateConfig(Config) error { return nil }

func (netlifyAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	token := headerValue(r.Header, "X-Webhook-Signature")
	if token == "" {
		return sigError("netlify: X-Webhook-Signature header missing")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return sigError("netlify: X-Webhook-Signature is not a compact JWS")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(rawHeader, &header) != nil || header.Alg != "HS256" {
		return sigError("netlify: JWS is not HS256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return sigError("netlify: JWS signature is not base64url")
	}
	if !anyKeySigned(sha256.New, secrets, [][]byte{sig}, []byte(parts[0]+"."+parts[1])) {
		return sigError("netlify: no secret signed the JWS")
	}
	var claims struct {
		Iss    string `json:"iss"`
		SHA256 string `json:"sha256"`
	}
	rawClaims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(rawClaims, &claims) != nil {
		return sigError("netlify: JWS claims are not JSON")
	}
	if claims.Iss != "netlify" {
		return sigError("netlify: JWS issuer is not netlify")
	}
	sum := sha256.Sum256(r.Body)
	if !hmac.Equal([]byte(strings.ToLower(claims.SHA256)), []byte(hex.EncodeToString(sum[:]))) {
		return sigError("netlify: JWS sha256 does not match the body")
	}
	return nil
}

func (netlifyAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("netlify: body is not a JSON object: %v", err)
	}
	id := idString(m["id"])
	spec := EventSpec{Kind: intake.KindEvent, OccurredAt: unixTime(m["updated_at"])}
	switch event := headerValue(r.Header, "X-Netlify-Event"); {
	case m["form_id"] != nil:
		spec.Type = "netlify.submission_created"
		spec.ProviderEventID = id
		spec.OccurredAt = unixTime(m["created_at"])
	case event != "":
		spec.Type = "netlify." + typeSegment(event)
		spec.ProviderEventID = joinID(event, id, str(m, "updated_at"))
	case str(m, "state") != "":
		spec.Type = "netlify.deploy." + typeSegment(str(m, "state"))
		// A deploy passes through states; its id, state and update time
		// name one notification.
		spec.ProviderEventID = joinID(id, str(m, "state"), str(m, "updated_at"))
	default:
		return Interpretation{}, Permanent("netlify: body is neither a deploy nor a form submission")
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, id)
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["site_id"]))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
