package provider

import (
	"crypto/sha256"
	"fmt"
	"time"
)

// verifyTimestampedHMAC checks the Stripe-like headers of Mux, Persona and
// ElevenLabs: each group is "t=<unix seconds>,<scheme>=<hex>[,<scheme>=<hex>…]"
// where the hex is the HMAC-SHA256 of "<t>.<body>" under a secret as
// written. Any group that one secret signed, at a time within tolerance of
// receipt (only its age when future is false), verifies the request.
func verifyTimestampedHMAC(name string, groups []string, scheme string, r *Request, secrets [][]byte, tolerance time.Duration, future bool) error {
	var timeErr error
	for _, g := range groups {
		params := signatureParams(g, ",")
		ts := oneParam(params, "t")
		sigs := decodeHexSigs(params[scheme]...)
		if ts == "" || len(sigs) == 0 {
			continue
		}
		signedAt, err := parseUnixSeconds(ts)
		if err != nil {
			continue
		}
		if !anyKeySigned(sha256.New, secrets, sigs, []byte(ts), []byte("."), r.Body) {
			continue
		}
		if err := checkTime(signedAt, r.ReceivedAt, tolerance, future); err != nil {
			timeErr = err
			continue
		}
		return nil
	}
	if timeErr != nil {
		return fmt.Errorf("%s: %w", name, timeErr)
	}
	return sigError("%s: no %s signature matches", name, scheme)
}
