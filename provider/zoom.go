package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/intakehq/intake"
)

// zoomAdapter verifies Zoom webhooks: x-zm-signature: v0=<hex HMAC-SHA256 of
// "v0:<x-zm-request-timestamp>:<body>"> under the app's secret token
// (https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events), and
// answers the endpoint.url_validation handshake with the HMAC of its
// plainToken. Zoom documents no tolerance; intake applies its default.
type zoomAdapter struct{}

func init() { Register(zoomAdapter{}) }

func (zoomAdapter) Name() string { return "zoom" }

func (zoomAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (a zoomAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	_, err := a.signer(r, secrets, cfg)
	return err
}

// signer returns the secret that signed r.
func (zoomAdapter) signer(r *Request, secrets [][]byte, cfg Config) ([]byte, error) {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return nil, configError("zoom", err)
	}
	header := headerValue(r.Header, "x-zm-signature")
	ts := headerValue(r.Header, "x-zm-request-timestamp")
	switch {
	case header == "":
		return nil, sigError("zoom: x-zm-signature header missing")
	case ts == "":
		return nil, sigError("zoom: x-zm-request-timestamp header missing")
	}
	hexSig, ok := strings.CutPrefix(header, "v0=")
	if !ok {
		return nil, sigError("zoom: x-zm-signature is not a v0 signature")
	}
	sigs := decodeHexSigs(hexSig)
	if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
		return nil, fmt.Errorf("zoom: %w", err)
	}
	for _, key := range secrets {
		if anyKeySigned(sha256.New, [][]byte{key}, sigs, []byte("v0:"+ts+":"), r.Body) {
			return key, nil
		}
	}
	return nil, sigError("zoom: no signature matches")
}

// zoomValidation is the plainToken of an endpoint.url_validation request.
func zoomValidation(r *Request) string {
	m, err := decodeObject(r.Body)
	if err != nil || str(m, "event") != "endpoint.url_validation" {
		return ""
	}
	return str(m, "payload", "plainToken")
}

// Challenge answers endpoint.url_validation with the HMAC of the plainToken
// under the secret that signed the request. An unsigned request gets no
// answer: the HMAC of a chosen text under the secret would let anyone sign
// any body.
func (a zoomAdapter) Challenge(r *Request, secrets [][]byte, cfg Config) (Challenge, bool) {
	plain := zoomValidation(r)
	if plain == "" {
		return Challenge{}, false
	}
	key, err := a.signer(r, secrets, cfg)
	if err != nil {
		return Challenge{}, false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(plain))
	body, err := marshalJSON(map[string]string{"plainToken": plain, "encryptedToken": hex.EncodeToString(m.Sum(nil))})
	if err != nil {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "application/json", Body: body}, true
}

func (zoomAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if zoomValidation(r) != "" {
		return Interpretation{EventType: "zoom.endpoint.url_validation", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("zoom: body is not a JSON object: %v", err)
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("zoom: body has no event")
	}
	object := firstOf(str(m, "payload", "object", "uuid"), idString(lookup(m, "payload", "object", "id")))
	spec := EventSpec{
		// Zoom sends no event id; a retry repeats the event, its time and
		// its object.
		ProviderEventID: joinID(event, idString(m["event_ts"]), object),
		Type:            "zoom." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      msTime(m["event_ts"]),
	}
	if p := firstOf(str(m, "payload", "object", "participant", "participant_uuid"),
		str(m, "payload", "object", "participant", "user_id")); p != "" && spec.ProviderEventID != "" {
		spec.ProviderEventID += ":" + p
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "payload", "object", "uuid"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "payload", "object", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
