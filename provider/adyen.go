package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/intakehq/intake"
)

// adyenAdapter verifies Adyen's standard webhooks
// (https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures),
// which sign each notification item rather than the request: an item's
// additionalData.hmacSignature is the base64 HMAC-SHA256, under the
// endpoint's HMAC key (hex, as the Customer Area shows it), of its
// pspReference, originalReference, merchantAccountCode, merchantReference,
// amount.value, amount.currency, eventCode and success joined by ":" (an
// absent field is empty). A request verifies only when every item does.
// Each item is one event; Adyen expects "[accepted]" back and signs no
// time.
type adyenAdapter struct{}

func init() { Register(adyenAdapter{}) }

func (adyenAdapter) Name() string { return "adyen" }

func (adyenAdapter) ValidateConfig(Config) error { return nil }

// adyenAccepted is the answer Adyen's documentation asks for.
var adyenAccepted = []byte("[accepted]")

// Challenge answers every notification "[accepted]", as Adyen asks; the
// request is verified and interpreted later like any other.
func (adyenAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	if r.Method != http.MethodPost {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain", Body: adyenAccepted}, true
}

// adyenItems is the NotificationRequestItem of every notification item.
func adyenItems(body []byte) ([]map[string]any, error) {
	m, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	wrapped := objects(m, "notificationItems")
	items := make([]map[string]any, 0, len(wrapped))
	for _, w := range wrapped {
		item, _ := w["NotificationRequestItem"].(map[string]any)
		if item == nil {
			return nil, errNoAdyenItem
		}
		items = append(items, item)
	}
	return items, nil
}

var errNoAdyenItem = errors.New("a notification item holds no NotificationRequestItem")

// adyenField renders a signed field as Adyen's libraries write it.
func adyenField(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return ""
}

// adyenSigned is the text an item's HMAC covers.
func adyenSigned(item map[string]any) []byte {
	fields := []any{
		item["pspReference"], item["originalReference"], item["merchantAccountCode"], item["merchantReference"],
		lookup(item, "amount", "value"), lookup(item, "amount", "currency"), item["eventCode"], item["success"],
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = adyenField(f)
	}
	return []byte(strings.Join(parts, ":"))
}

func (adyenAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	items, err := adyenItems(r.Body)
	if err != nil {
		return sigError("adyen: body is not a notification")
	}
	if len(items) == 0 {
		return sigError("adyen: no notification items to verify")
	}
	var keys [][]byte
	for _, s := range secrets {
		if key, err := hex.DecodeString(strings.TrimSpace(string(s))); err == nil && len(key) > 0 {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return sigError("adyen: no secret is a hex HMAC key")
	}
	for i, item := range items {
		sig, err := decodeBase64Sig(str(item, "additionalData", "hmacSignature"))
		if err != nil || len(sig) == 0 {
			return sigError("adyen: item %d carries no base64 hmacSignature", i)
		}
		if !anyKeySigned(sha256.New, keys, [][]byte{sig}, adyenSigned(item)) {
			return sigError("adyen: item %d: no signature matches", i)
		}
	}
	return nil
}

func (adyenAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	items, err := adyenItems(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("adyen: body is not a notification: %v", err)
	}
	if len(items) == 0 {
		return Interpretation{}, Permanent("adyen: the notification has no items")
	}
	specs := make([]EventSpec, 0, len(items))
	for _, item := range items {
		code := str(item, "eventCode")
		if code == "" {
			return Interpretation{}, Permanent("adyen: a notification item has no eventCode")
		}
		psp := str(item, "pspReference")
		spec := EventSpec{
			// Adyen's guidance names a notification by these three; a
			// retry repeats them.
			ProviderEventID: joinID(psp, code, adyenField(item["success"])),
			Type:            "adyen." + typeSegment(strings.ReplaceAll(code, ":", ".")),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(item["eventDate"]),
		}
		if spec.ProviderEventID == "" {
			spec.ProviderEventID = itemDigest("adyen:", item)
		}
		for _, id := range []string{psp, str(item, "originalReference"), str(item, "merchantReference")} {
			spec.ObjectIDs = appendID(spec.ObjectIDs, id)
		}
		spec.Data, spec.DataTruncated = itemData(item)
		specs = append(specs, spec)
	}
	return batch("adyen", "", specs), nil
}
