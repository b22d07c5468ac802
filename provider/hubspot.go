package provider

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// hubspotAdapter verifies HubSpot webhooks
// (https://developers.hubspot.com/docs/apps/legacy-apps/authentication/validating-requests)
// under the app's client secret:
//
//	v3  X-HubSpot-Signature-v3: base64 HMAC-SHA256 of method + URI + body +
//	    X-HubSpot-Request-Timestamp (unix ms), refused when older than five minutes
//	v2  X-HubSpot-Signature: hex SHA-256 of secret + method + URI + body
//	v1  X-HubSpot-Signature: hex SHA-256 of secret + body
//
// When the v3 signature is present only it counts; v1 and v2 (chosen by
// X-HubSpot-Signature-Version) sign no time and are kept for requests that
// carry nothing newer. The URI is the public URL HubSpot was given.
// Deliveries batch events; each becomes one event.
type hubspotAdapter struct{}

func init() { Register(hubspotAdapter{}) }

// hubspotTolerance is HubSpot's five minutes; it bounds only the age.
const hubspotTolerance = 5 * time.Minute

// hubspotURIDecoding undoes the percent-encodings HubSpot's v3 guide lists.
var hubspotURIDecoding = strings.NewReplacer(
	"%3A", ":", "%2F", "/", "%3F", "?", "%40", "@", "%21", "!", "%24", "$", "%27", "'",
	"%28", "(", "%29", ")", "%2A", "*", "%2C", ",", "%3B", ";",
	"%3a", ":", "%2f", "/", "%3f", "?", "%2a", "*", "%2c", ",", "%3b", ";",
)

func (hubspotAdapter) Name() string { return "hubspot" }

func (hubspotAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, hubspotTolerance)
	return err
}

func (hubspotAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, hubspotTolerance)
	if err != nil {
		return configError("hubspot", err)
	}
	method := r.Method
	if method == "" {
		method = "POST"
	}
	if v3 := headerValue(r.Header, "X-HubSpot-Signature-v3"); v3 != "" {
		ts := headerValue(r.Header, "X-HubSpot-Request-Timestamp")
		if ts == "" {
			return sigError("hubspot: X-HubSpot-Request-Timestamp header missing")
		}
		signedAt, err := unixMillis(ts)
		if err != nil {
			return fmt.Errorf("hubspot: %w", err)
		}
		if err := checkTime(signedAt, r.ReceivedAt, tolerance, false); err != nil {
			return fmt.Errorf("hubspot: %w", err)
		}
		sig, err := decodeBase64Sig(v3)
		if err != nil {
			return sigError("hubspot: X-HubSpot-Signature-v3 is not base64")
		}
		if r.URL == "" {
			return sigError("hubspot: the public URL is unknown")
		}
		uri := hubspotURIDecoding.Replace(r.URL)
		if anyKeySigned(sha256.New, secrets, [][]byte{sig}, []byte(method+uri), r.Body, []byte(ts)) {
			return nil
		}
		return sigError("hubspot: no v3 signature matches")
	}
	header := headerValue(r.Header, "X-HubSpot-Signature")
	if header == "" {
		return sigError("hubspot: X-HubSpot-Signature-v3 header missing")
	}
	sigs := decodeHexSigs(header)
	if len(sigs) == 0 {
		return sigError("hubspot: X-HubSpot-Signature is not hex")
	}
	var signed func(secret []byte) []byte
	switch v := headerValue(r.Header, "X-HubSpot-Signature-Version"); v {
	case "", "v1":
		signed = func(secret []byte) []byte { return append(append([]byte{}, secret...), r.Body...) }
	case "v2":
		if r.URL == "" {
			return sigError("hubspot: the public URL is unknown")
		}
		signed = func(secret []byte) []byte {
			return append([]byte(string(secret)+method+r.URL), r.Body...)
		}
	default:
		return sigError("hubspot: unknown signature version")
	}
	match := false
	for _, secret := range secrets {
		if len(secret) == 0 {
			continue
		}
		sum := sha256.Sum256(signed(secret))
		for _, sig := range sigs {
			if subtle.ConstantTimeCompare(sum[:], sig) == 1 {
				match = true
			}
		}
	}
	if match {
		return nil
	}
	return sigError("hubspot: no signature matches")
}

func (hubspotAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	items, err := decodeArray(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("hubspot: body is not a JSON array of events: %v", err)
	}
	specs := make([]EventSpec, 0, len(items))
	for _, item := range items {
		typ := str(item, "subscriptionType")
		if typ == "" {
			return Interpretation{}, Permanent("hubspot: event has no subscriptionType")
		}
		spec := EventSpec{
			ProviderEventID: hubspotEventID(item),
			Type:            "hubspot." + typeSegment(typ),
			Kind:            intake.KindEvent,
			OccurredAt:      msTime(item["occurredAt"]),
		}
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(item["objectId"]))
		spec.Data, spec.DataTruncated = itemData(item)
		specs = append(specs, spec)
	}
	return batch("hubspot", "", specs), nil
}

// hubspotEventID names one event of a batch. HubSpot's eventId is "not
// guaranteed to be unique" on its own, so the portal, subscription, object
// and property it is about are part of the name; attemptNumber, which
// changes on a retry, is not.
func hubspotEventID(item map[string]any) string {
	id := joinID(idString(item["portalId"]), idString(item["subscriptionId"]), idString(item["eventId"]))
	if id == "" {
		return itemDigest("hubspot:", withoutKey(item, "attemptNumber"))
	}
	for _, f := range []string{"objectId", "propertyName"} {
		if v := idString(item[f]); v != "" {
			id += ":" + v
		}
	}
	return id
}

// withoutKey is a shallow copy of m without key.
func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
