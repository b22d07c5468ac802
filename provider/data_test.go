package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/intakehq/intake"
)

func TestEventDataKeepsBodyThatFits(t *testing.T) {
	body := []byte(`{"id":"evt_1", "type":"x"}`)
	data, truncated := eventData(body)
	if string(data) != string(body) || truncated {
		t.Fatalf("eventData = %s, %v", data, truncated)
	}
	body[0] = '['
	if data[0] != '{' {
		t.Fatal("eventData shares memory with the body")
	}
}

// bigStripeEvent is a Stripe-shaped event far over intake.MaxEventData,
// mostly in a long line-item list and a long description.
func bigStripeEvent() []byte {
	var lines []string
	for i := 0; i < 2000; i++ {
		lines = append(lines, fmt.Sprintf(`{"id":"il_%d","amount":%d,"description":"line item number %d"}`, i, i, i))
	}
	return []byte(`{"id":"evt_big","object":"event","type":"invoice.finalized","created":1700000000,` +
		`"data":{"object":{"id":"in_big","object":"invoice","customer":"cus_1","amount_due":4200,` +
		`"description":"` + strings.Repeat("d", 5000) + `",` +
		`"metadata":{"order":"o-77"},` +
		`"lines":{"object":"list","data":[` + strings.Join(lines, ",") + `],"has_more":false}}},` +
		`"livemode":false,"pending_webhooks":1}`)
}

func TestEventDataTrimsLargeBodyToSmallFields(t *testing.T) {
	body := bigStripeEvent()
	if len(body) <= intake.MaxEventData {
		t.Fatalf("test body is only %d bytes", len(body))
	}
	data, truncated := eventData(body)
	if !truncated || len(data) > intake.MaxEventData {
		t.Fatalf("truncated %v, %d bytes; want truncated and at most %d", truncated, len(data), intake.MaxEventData)
	}
	var got struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
		Data    struct {
			Object map[string]any `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("trimmed data is not JSON: %v\n%s", err, data)
	}
	obj := got.Data.Object
	if got.ID != "evt_big" || got.Type != "invoice.finalized" || got.Created != 1700000000 {
		t.Errorf("top-level fields lost: %+v", got)
	}
	if obj["id"] != "in_big" || obj["customer"] != "cus_1" || obj["metadata"] == nil {
		t.Errorf("data.object small fields lost: %v", obj)
	}
	if _, ok := obj["description"]; ok {
		t.Error("a 5 KB string was kept")
	}
	lines, _ := obj["lines"].(map[string]any)
	if lines["object"] != "list" || lines["data"] != nil {
		t.Errorf("lines = %v; want its small fields without the big array", lines)
	}

	again, _ := eventData(body)
	if string(again) != string(data) {
		t.Error("trimming is not deterministic")
	}
}

func TestEventDataNeverExceedsLimitEvenWithManySmallFields(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := 0; i < 5000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"field_%05d":"%s"`, i, strings.Repeat("<", 20)) // would grow if HTML-escaped
	}
	b.WriteString(`}`)
	data, truncated := eventData([]byte(b.String()))
	if !truncated || len(data) > intake.MaxEventData || !json.Valid(data) {
		t.Fatalf("truncated %v, %d bytes, valid %v", truncated, len(data), json.Valid(data))
	}
}

func TestEventDataOfLargeNonObjectIsNull(t *testing.T) {
	big := []byte(`[` + strings.Repeat(`1,`, intake.MaxEventData) + `1]`)
	data, truncated := eventData(big)
	if string(data) != "null" || !truncated {
		t.Fatalf("eventData = %s, %v", data, truncated)
	}
}

func TestLargeStripeEventIsInterpretedWithTrimmedData(t *testing.T) {
	ev := oneEvent(t, adapter(t, "stripe"), &Request{Body: bigStripeEvent()}, nil)
	if !ev.DataTruncated || ev.ProviderEventID != "evt_big" || !equalStrings(ev.ObjectIDs, []string{"in_big"}) {
		t.Fatalf("got truncated %v id %q objects %v", ev.DataTruncated, ev.ProviderEventID, ev.ObjectIDs)
	}
}

func TestCheckTimestampBoundaries(t *testing.T) {
	at := time.Unix(1000000, 0)
	cases := []struct {
		ts   string
		want bool
	}{
		{"1000000", true},
		{"999700", true},  // exactly the tolerance before
		{"1000300", true}, // exactly the tolerance after
		{"999699", false},
		{"1000301", false},
		{"-9223372036854775808", false},
		{"9223372036854775807", false},
		{"99999999999999999999", false},
		{"", false},
		{"1e6", false},
		{" 1000000", false},
	}
	for _, c := range cases {
		err := checkTimestamp(c.ts, at, 5*time.Minute)
		if (err == nil) != c.want {
			t.Errorf("checkTimestamp(%q) = %v, want ok=%v", c.ts, err, c.want)
		}
		if err != nil && !errors.Is(err, ErrSignature) {
			t.Errorf("checkTimestamp(%q) = %v, not an ErrSignature", c.ts, err)
		}
	}
	if checkTimestamp("1000000", time.Time{}, 5*time.Minute) == nil {
		t.Error("a zero received time accepted a timestamp")
	}
}

func TestTypeSegmentKeepsTypesMatchable(t *testing.T) {
	cases := map[string]string{
		"invoice.paid":             "invoice.paid",
		"v1.billing.meter-x:y/z_1": "v1.billing.meter-x:y/z_1",
		"order created\n*":         "order_created__",
		strings.Repeat("a", 500):   strings.Repeat("a", maxTypeSegment),
		"caf\u00e9":                "caf__",
	}
	for in, want := range cases {
		if got := typeSegment(in); got != want {
			t.Errorf("typeSegment(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorsNeverCarrySecretsOrSignatures(t *testing.T) {
	secret := "super-secret-value"
	sig := "v0=" + sha256Hex("other", "x")
	r := slackRequest(sig, unix(received), "body", received)
	err := adapter(t, "slack").Verify(r, secrets(secret), nil)
	if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), sig[3:]) || strings.Contains(err.Error(), "body") {
		t.Fatalf("error %q leaks request or secret material", err)
	}
}

func TestEventDataReplacesInvalidUTF8(t *testing.T) {
	data, truncated := eventData([]byte("{\"name\":\"caf\xe9\",\"n\":12345678901234567890}"))
	if truncated || !utf8.Valid(data) || string(data) != `{"n":12345678901234567890,"name":"caf`+"\uFFFD"+`"}` {
		t.Fatalf("eventData = %q, %v", data, truncated)
	}
}
