package provider

import (
	"crypto/sha1"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Segment's Webhooks destination documents the scheme (hex HMAC-SHA1 of the
// body under the shared secret) but publishes no signed example, and its
// SDKs do not verify; the track call below is shaped after the Segment
// spec's example (https://segment.com/docs/connections/spec/track/) and
// signed here.
const (
	segmentSecret = "segment-shared-secret"
	segmentBody   = `{"anonymousId":"23adfd82-aa0f-45a7-a756-24f2a7a4c895","context":{"library":{"name":"analytics.js","version":"2.11.1"},"ip":"108.0.78.21"},"event":"Course Clicked","messageId":"ajs-f8ca1e4de5024d9430b3928bd8ac6b96","properties":{"title":"Intro to Analytics"},"receivedAt":"2015-12-12T19:11:01.266Z","sentAt":"2015-12-12T19:11:01.169Z","timestamp":"2015-12-12T19:11:01.249Z","type":"track","userId":"AiUGstSDIg","originalTimestamp":"2015-12-12T19:11:01.152Z"}`
)

var segmentSignature = hexMAC(sha1.New, segmentSecret, segmentBody)

func segmentRequest(sig, body string) *Request { return post(body, "X-Signature", sig) }

func TestSegmentVerifiesItsSignature(t *testing.T) {
	wantVerified(t, adapter(t, "segment").Verify(segmentRequest(segmentSignature, segmentBody), secrets("an-older-secret", segmentSecret), nil))
	wantVerified(t, adapter(t, "segment").Verify(segmentRequest(strings.ToUpper(segmentSignature), segmentBody), secrets(segmentSecret), nil))
}

func TestSegmentRejects(t *testing.T) {
	wantAllRejected(t, "segment", nil, []rejectCase{
		{"body changed by one byte", segmentRequest(segmentSignature, strings.Replace(segmentBody, `"track"`, `"trace"`, 1)), secrets(segmentSecret)},
		{"wrong secret", segmentRequest(segmentSignature, segmentBody), secrets("another-secret")},
		{"no secrets", segmentRequest(segmentSignature, segmentBody), nil},
		{"empty secret", segmentRequest(hexMAC(sha1.New, "", segmentBody), segmentBody), secrets("")},
		{"missing header", segmentRequest("", segmentBody), secrets(segmentSecret)},
		{"SHA-256 instead of SHA-1", segmentRequest(sha256Hex(segmentSecret, segmentBody), segmentBody), secrets(segmentSecret)},
	})
}

func TestSegmentInterpretsACall(t *testing.T) {
	ev := oneEvent(t, adapter(t, "segment"), segmentRequest("", segmentBody), nil)
	if ev.ProviderEventID != "ajs-f8ca1e4de5024d9430b3928bd8ac6b96" || ev.Type != "segment.track" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2015, 12, 12, 19, 11, 1, 249e6, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{"AiUGstSDIg"}) {
		t.Errorf("OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
	if string(ev.Data) != segmentBody {
		t.Errorf("Data = %s", ev.Data)
	}
}

func TestSegmentSplitsABatchIntoOneEventPerCall(t *testing.T) {
	body := `[{"type":"identify","messageId":"m1","userId":"u1"},{"type":"group","messageId":"m2","userId":"u1","groupId":"g1"}]`
	in, err := adapter(t, "segment").Interpret(segmentRequest("", body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Events) != 2 || in.EventType != "segment.batch" || in.ProviderEventID != "" {
		t.Fatalf("got %+v", in)
	}
	if a, b := in.Events[0], in.Events[1]; a.Type != "segment.identify" || a.ProviderEventID != "m1" ||
		b.Type != "segment.group" || !equalStrings(b.ObjectIDs, []string{"u1", "g1"}) {
		t.Fatalf("events %+v", in.Events)
	}
}

func TestSegmentBatchPastTheMaximumNamesEveryCall(t *testing.T) {
	// The worker makes the message dead too_many_events; nothing is dropped here.
	n := intake.MaxEventsPerMessage + 1
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"type":"track","messageId":"m%d"}`, i)
	}
	in, err := adapter(t, "segment").Interpret(segmentRequest("", "["+strings.Join(items, ",")+"]"), nil)
	if err != nil || len(in.Events) != n {
		t.Fatalf("%d events (%v), want %d", len(in.Events), err, n)
	}
}

func TestSegmentRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"messageId":"m"}`, `[{"type":"track"},{}]`, `[1]`} {
		_, err := adapter(t, "segment").Interpret(segmentRequest("", body), nil)
		wantPermanent(t, err)
	}
}
