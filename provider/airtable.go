package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/intakehq/intake"
)

// airtableAdapter verifies Airtable webhook notifications
// (https://airtable.com/developers/web/api/webhooks-overview):
// X-Airtable-Content-MAC is "hmac-sha256=<hex HMAC-SHA256 of the body>"
// keyed with the webhook's macSecretBase64, base64-decoded; a secret that
// does not decode never verifies. The body is only a ping naming the base
// and the webhook (the changes are fetched from Airtable's payloads
// endpoint) and carries no id, so the webhook id and the ping's timestamp
// name it. Airtable signs no time.
type airtableAdapter struct{}

func init() { Register(airtableAdapter{}) }

const airtableMACPrefix = "hmac-sha256="

func (airtableAdapter) Name() string { return "airtable" }

func (airtableAdapter) ValidateConfig(Config) error { return nil }

func (airtableAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Airtable-Content-MAC")
	if header == "" {
		return sigError("airtable: X-Airtable-Content-MAC header missing")
	}
	if len(header) < len(airtableMACPrefix) || !strings.EqualFold(header[:len(airtableMACPrefix)], airtableMACPrefix) {
		return sigError("airtable: X-Airtable-Content-MAC is not hmac-sha256")
	}
	keys := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(s))); err == nil {
			keys = append(keys, k)
		}
	}
	if anyKeySigned(sha256.New, keys, decodeHexSigs(header[len(airtableMACPrefix):]), r.Body) {
		return nil
	}
	return sigError("airtable: no signature matches")
}

func (airtableAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("airtable: body is not a JSON object: %v", err)
	}
	webhook := idString(lookup(m, "webhook", "id"))
	if webhook == "" {
		return Interpretation{}, Permanent("airtable: notification names no webhook")
	}
	ts := str(m, "timestamp")
	spec := EventSpec{
		ProviderEventID: joinID(webhook, ts),
		Type:            "airtable.notification",
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(ts),
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("airtable:", m)
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "base", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, webhook)
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
