package provider

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/intakehq/intake"
)

// webflowAdapter verifies Webflow webhooks
// (https://developers.webflow.com/data/docs/working-with-webhooks):
// x-webflow-signature is the hex HMAC-SHA256 of
// "<x-webflow-timestamp>:<body>" under the OAuth app's client secret, or
// the secret returned when the webhook was created through the API;
// x-webflow-timestamp is unix milliseconds. Webflow's SDK checks no time;
// its documentation refuses a request older than five minutes, so only age
// is judged. A webhook Webflow does not sign never verifies.
type webflowAdapter struct{}

func init() { Register(webflowAdapter{}) }

func (webflowAdapter) Name() string { return "webflow" }

func (webflowAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (webflowAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("webflow", err)
	}
	header := headerValue(r.Header, "X-Webflow-Signature")
	ts := headerValue(r.Header, "X-Webflow-Timestamp")
	switch {
	case header == "":
		return sigError("webflow: x-webflow-signature header missing")
	case ts == "":
		return sigError("webflow: x-webflow-timestamp header missing")
	}
	signedAt, err := unixMillis(ts)
	if err != nil {
		return fmt.Errorf("webflow: %w", err)
	}
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, false); err != nil {
		return fmt.Errorf("webflow: %w", err)
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), []byte(ts+":"), r.Body) {
		return nil
	}
	return sigError("webflow: no signature matches")
}

// webflowTimes are the payload's time fields, one per kind of trigger.
var webflowTimes = []string{"submittedAt", "lastUpdated", "publishedOn", "createdOn"}

func (webflowAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("webflow: body is not a JSON object: %v", err)
	}
	trigger := str(m, "triggerType")
	if trigger == "" {
		return Interpretation{}, Permanent("webflow: body has no triggerType")
	}
	payload, _ := m["payload"].(map[string]any)
	at := ""
	for _, f := range webflowTimes {
		if at = str(payload, f); at != "" {
			break
		}
	}
	spec := EventSpec{
		Type:       "webflow." + typeSegment(trigger),
		Kind:       intake.KindEvent,
		OccurredAt: unixTime(at),
	}
	// No event id is sent. A form submission's id names it; an item's id
	// with its update time names one change; failing those, the body,
	// which a retry repeats.
	if id := idString(payload["id"]); id != "" {
		parts := []string{trigger, id}
		if at != "" {
			parts = append(parts, at)
		}
		spec.ProviderEventID = strings.Join(parts, ":")
	} else {
		spec.ProviderEventID = itemDigest("webflow:", m)
	}
	for _, f := range []string{"id", "collectionId", "siteId"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(payload[f]))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
