package provider

import (
	"crypto/sha256"
	"fmt"

	"github.com/intakehq/intake"
)

// customerioAdapter verifies Customer.io reporting webhooks: X-CIO-Signature
// is the hex HMAC-SHA256 of "v0:<X-CIO-Timestamp>:<body>" under the
// webhook's signing key (https://docs.customer.io/api/webhooks/). Customer.io
// asks for no tolerance and its example checks none, so the timestamp is
// judged only when config tolerance is set; event_id stops replays of what
// was already accepted.
type customerioAdapter struct{}

func init() { Register(customerioAdapter{}) }

func (customerioAdapter) Name() string { return "customerio" }

func (customerioAdapter) ValidateConfig(cfg Config) error {
	if _, ok := cfg["tolerance"]; ok {
		_, err := toleranceSetting(cfg, defaultTolerance)
		return err
	}
	return nil
}

func (customerioAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	header := headerValue(r.Header, "X-CIO-Signature")
	ts := headerValue(r.Header, "X-CIO-Timestamp")
	switch {
	case header == "":
		return sigError("customerio: X-CIO-Signature header missing")
	case ts == "":
		return sigError("customerio: X-CIO-Timestamp header missing")
	}
	if _, set := cfg["tolerance"]; set {
		tolerance, err := toleranceSetting(cfg, defaultTolerance)
		if err != nil {
			return configError("customerio", err)
		}
		if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
			return fmt.Errorf("customerio: %w", err)
		}
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), []byte("v0:"+ts+":"), r.Body) {
		return nil
	}
	return sigError("customerio: no signature matches")
}

func (customerioAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("customerio: body is not a JSON object: %v", err)
	}
	objectType, metric := str(m, "object_type"), str(m, "metric")
	if objectType == "" || metric == "" {
		return Interpretation{}, Permanent("customerio: body lacks object_type or metric")
	}
	spec := EventSpec{
		// Customer.io's event_id; a retry resends the same event.
		ProviderEventID: str(m, "event_id"),
		Type:            "customerio." + typeSegment(objectType) + "." + typeSegment(metric),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["timestamp"]),
	}
	// The delivery an app gets back when it sends a message, then the person.
	for _, path := range [][]string{
		{"data", "delivery_id"}, {"data", "customer_id"}, {"data", "identifiers", "id"}, {"data", "identifiers", "cio_id"},
	} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, path...)))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
