package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// flutterwaveAdapter verifies Flutterwave webhooks
// (https://developer.flutterwave.com/docs/webhooks) under the secret hash
// set in the dashboard's webhook settings. Current (v4) deliveries carry
// flutterwave-signature, the base64 HMAC-SHA256 of the raw body under the
// secret hash; v3 deliveries carry verif-hash, the secret hash itself
// (https://developer.flutterwave.com/v3.0/docs/webhooks, and Flutterwave's
// own WooCommerce plugin compares it so). When flutterwave-signature is
// present it alone decides. Flutterwave signs no timestamp and sends no id
// that its docs call stable across retries.
type flutterwaveAdapter struct{}

func init() { Register(flutterwaveAdapter{}) }

func (flutterwaveAdapter) Name() string { return "flutterwave" }

func (flutterwaveAdapter) ValidateConfig(Config) error { return nil }

// CredentialHeaders names verif-hash: it carries the secret hash as it
// is, and its name is on no credential word list.
func (flutterwaveAdapter) CredentialHeaders(Config) []string { return []string{"verif-hash"} }

func (flutterwaveAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if header := headerValue(r.Header, "flutterwave-signature"); header != "" {
		sig, err := decodeBase64Sig(header)
		if err != nil {
			return sigError("flutterwave: flutterwave-signature is not base64")
		}
		if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
			return nil
		}
		return sigError("flutterwave: no signature matches")
	}
	hash := headerValue(r.Header, "verif-hash")
	if hash == "" {
		return sigError("flutterwave: neither flutterwave-signature nor verif-hash is present")
	}
	if anySecretEquals(secrets, hash) {
		return nil
	}
	return sigError("flutterwave: verif-hash matches no secret hash")
}

func (flutterwaveAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("flutterwave: body is not a JSON object: %v", err)
	}
	// v3 names the event "event" ("event.type" is the payment kind); v4
	// names it "type".
	event := firstOf(str(m, "event"), str(m, "type"))
	if event == "" {
		return Interpretation{}, Permanent("flutterwave: body has neither event nor type")
	}
	data, _ := m["data"].(map[string]any)
	spec := EventSpec{
		ProviderEventID: flutterwaveEventID(event, data),
		Type:            "flutterwave." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt: firstTime(msTime(m["timestamp"]), unixTime(data["created_datetime"]), unixTime(data["created_at"]),
			unixTime(data["createdAt"])),
	}
	// tx_ref (v3) and reference (v4) are the merchant's own, set when the
	// charge was created: the natural key for a subject link.
	for _, f := range []string{"tx_ref", "reference", "id", "flw_ref"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(data[f]))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// flutterwaveEventID names an event from fields a retry repeats: the
// event, the object it is about, and that object's status, so that a
// charge that completes as failed and later as successful is two events.
// "" when the object has no id, and the body digest decides.
func flutterwaveEventID(event string, data map[string]any) string {
	object := firstOf(idString(data["id"]), idString(data["tx_ref"]), idString(data["reference"]))
	if object == "" {
		return ""
	}
	if status := str(data, "status"); status != "" {
		return joinID(event, object, status)
	}
	return joinID(event, object)
}
