package provider

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// recurlyAdapter verifies Recurly's JSON webhooks
// (https://recurly.com/developers/guides/signature-verification.html):
// recurly-signature is "<t>,<sig>[,<sig>…]", t the signing time in unix
// milliseconds and each sig a hex HMAC-SHA256 of "<t>.<body>" under the
// endpoint's secret (several while a secret rotates). Like Recurly's client
// libraries, t may sit five minutes either way of receipt.
type recurlyAdapter struct{}

func init() { Register(recurlyAdapter{}) }

func (recurlyAdapter) Name() string { return "recurly" }

func (recurlyAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (recurlyAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("recurly", err)
	}
	header := headerValue(r.Header, "recurly-signature")
	if header == "" {
		return sigError("recurly: recurly-signature header missing")
	}
	ts, sigList, _ := strings.Cut(header, ",")
	if ts == "" || strings.Trim(ts, "0123456789") != "" {
		return sigError("recurly: timestamp is not unix milliseconds")
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return sigError("recurly: timestamp is not unix milliseconds")
	}
	if err := checkTime(time.UnixMilli(ms), r.ReceivedAt, tolerance, true); err != nil {
		return fmt.Errorf("recurly: %w", err)
	}
	sigs := decodeHexSigs(strings.Split(sigList, ",")...)
	if len(sigs) == 0 {
		return sigError("recurly: no hex signature in recurly-signature")
	}
	if anyKeySigned(sha256.New, secrets, sigs, []byte(ts+"."), r.Body) {
		return nil
	}
	return sigError("recurly: no signature matches")
}

func (recurlyAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("recurly: body is not a JSON object: %v", err)
	}
	object, event := str(m, "object_type"), str(m, "event_type")
	if object == "" || event == "" {
		return Interpretation{}, Permanent("recurly: notification has no object_type or event_type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "recurly." + typeSegment(object) + "." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["event_time"]),
	}
	// The object's uuid (subscriptions, invoices, …) and its account's
	// code name what the notification is about.
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["uuid"]))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "account_code"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
