package sdkcheck

import (
	"testing"
	"time"
)

// adyenKey is an HMAC key as Adyen's Customer Area shows it (hex).
const adyenKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

// adyenNotification is a standard notification of two items, unsigned.
const adyenNotification = `{"live":"false","notificationItems":[` +
	`{"NotificationRequestItem":{"additionalData":{},"amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION",` +
	`"eventDate":"2025-03-14T09:26:53+01:00","merchantAccountCode":"IntakeMerchant","merchantReference":"order-7f3a",` +
	`"paymentMethod":"visa","pspReference":"QFQTPCQ8HXSKGK82","reason":"","success":"true"}},` +
	`{"NotificationRequestItem":{"additionalData":{},"amount":{"currency":"EUR","value":500},"eventCode":"REFUND",` +
	`"eventDate":"2025-03-14T09:27:10+01:00","merchantAccountCode":"IntakeMerchant","merchantReference":"order-7f3a",` +
	`"originalReference":"QFQTPCQ8HXSKGK82","paymentMethod":"visa","pspReference":"MK4JH3B2S9ZFDR82","reason":"","success":"true"}}]}`

// @adyen/api-library signs (hmacValidator.calculateHmac, each item) and
// verifies (hmacValidator.validateHMAC, each item; a request is accepted
// when every item is): what it signs must verify with intake, intake's
// sample with it, and their tamperings with neither. Adyen signs some
// fields of each item, and no time.
func TestAdyenAgreesWithAdyenAPILibrary(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "adyen", adyenKey, now)
	byAdyen := nodeSigned(t, "adyen", adyenKey, []byte(adyenNotification), now, now)
	body := string(byAdyen.Body)
	changed := func(old, new string) []byte { return []byte(replaceOnce(t, body, old, new)) }

	agreeNode(t, "adyen", []string{adyenKey}, nil, []delivery{
		{"intake's sample", good, true},
		{"two items signed by the SDK", byAdyen, true},
		{"the second item's amount changed by one digit", withBody(byAdyen, changed(`"value":500`, `"value":501`)), false},
		{"the first item's pspReference changed by one byte", withBody(byAdyen, changed(`"pspReference":"QFQT`, `"pspReference":"QFQX`)), false},
		{"the second item's success turned", withBody(byAdyen, changed(`"success":"true"}}]`, `"success":"false"}}]`)), false},
		// Adyen does not sign the payment method or the event date.
		{"a field Adyen does not sign changed", withBody(byAdyen, changed(`"paymentMethod":"visa"`, `"paymentMethod":"mc"`)), true},
		{"intake's sample, its amount changed", withBody(good, []byte(replaceOnce(t, string(good.Body), `"value":1130`, `"value":1131`))), false},
		{"signed with another key", sample(t, "adyen", "0011223344556677889900AABBCCDDEEFF0011223344556677889900AABBCCDD", now), false},
		{"the items unsigned", withBody(byAdyen, []byte(adyenNotification)), false},
	})
}
