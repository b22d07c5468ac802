package provider

import (
	"crypto/sha256"
	"testing"
	"time"
)

// Box's SDK example, from box/box-python-sdk, test/unit/object/test_webhook.py
// (test_validate_message): the body is that test's dict encoded with
// separators (',', ':'), and both signatures reproduce exactly.
const (
	boxDocBody      = `{"type":"webhook_event","webhook":{"id":"1234567890"},"trigger":"FILE.UPLOADED","source":{"id":"1234567890","type":"file","name":"Test.txt"}}`
	boxDocTimestamp = "2020-01-01T00:00:00-07:00"
	boxDocPrimary   = "6TfeAW3A1PASkgboxxA5yqHNKOwFyMWuEXny/FPD5hI="
	boxDocSecondary = "v+1CD1Jdo3muIcbpv5lxxgPglOqMfsNHPV899xWYydo="
)

var boxDocTime = time.Date(2020, 1, 1, 7, 0, 0, 0, time.UTC)

func boxRequest(primary, secondary, ts, body string, at time.Time) *Request {
	r := post(body, "BOX-DELIVERY-ID", "f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f", "BOX-DELIVERY-TIMESTAMP", ts,
		"BOX-SIGNATURE-ALGORITHM", "HmacSHA256", "BOX-SIGNATURE-VERSION", "1")
	if primary != "" {
		r.Header.Set("BOX-SIGNATURE-PRIMARY", primary)
	}
	if secondary != "" {
		r.Header.Set("BOX-SIGNATURE-SECONDARY", secondary)
	}
	r.ReceivedAt = at
	return r
}

func TestBoxVerifiesSDKExampleWithEitherKey(t *testing.T) {
	r := boxRequest(boxDocPrimary, boxDocSecondary, boxDocTimestamp, boxDocBody, boxDocTime.Add(time.Minute))
	wantVerified(t, adapter(t, "box").Verify(r, secrets("SamplePrimaryKey", "SampleSecondaryKey"), nil))
	// Mid-rotation: the primary key has been reset, the secondary still signs.
	wantVerified(t, adapter(t, "box").Verify(r, secrets("SampleSecondaryKey"), nil))
	wantVerified(t, adapter(t, "box").Verify(r, secrets("SamplePrimaryKey"), nil))
}

func TestBoxRejects(t *testing.T) {
	at := boxDocTime
	keys := secrets("SamplePrimaryKey", "SampleSecondaryKey")
	wantAllRejected(t, "box", nil, []rejectCase{
		{"tampered body", boxRequest(boxDocPrimary, boxDocSecondary, boxDocTimestamp, boxDocBody+" ", at), keys},
		{"re-dated", boxRequest(boxDocPrimary, boxDocSecondary, "2020-01-01T00:00:01-07:00", boxDocBody, at), keys},
		{"wrong keys", boxRequest(boxDocPrimary, boxDocSecondary, boxDocTimestamp, boxDocBody, at), secrets("IncorrectKey")},
		{"no secrets", boxRequest(boxDocPrimary, boxDocSecondary, boxDocTimestamp, boxDocBody, at), nil},
		{"older than ten minutes", boxRequest(boxDocPrimary, boxDocSecondary, boxDocTimestamp, boxDocBody, at.Add(10*time.Minute+time.Second)), keys},
		{"no signatures", boxRequest("", "", boxDocTimestamp, boxDocBody, at), keys},
		{"missing timestamp", boxRequest(boxDocPrimary, boxDocSecondary, "", boxDocBody, at), keys},
		{"timestamp not RFC 3339", boxRequest(b64MAC(sha256.New, "SamplePrimaryKey", boxDocBody+"1577862000"), "", "1577862000", boxDocBody, at), keys},
	})
	v2 := boxRequest(boxDocPrimary, boxDocSecondary, boxDocTimestamp, boxDocBody, at)
	v2.Header.Set("BOX-SIGNATURE-VERSION", "2")
	wantRejected(t, adapter(t, "box").Verify(v2, keys, nil))
}

func TestBoxInterpretsFileUploaded(t *testing.T) {
	body := `{"type":"webhook_event","id":"eb0c4e06-751f-442c-86f8-fd5bb404dbec","created_at":"2016-05-09T17:41:27-07:00",` +
		`"trigger":"FILE.UPLOADED","webhook":{"id":"53","type":"webhook"},"source":{"id":"73835521473","type":"file"}}`
	r := boxRequest("", "", "", body, received)
	ev := oneEvent(t, adapter(t, "box"), r, nil)
	if ev.Type != "box.FILE.UPLOADED" || ev.ProviderEventID != "eb0c4e06-751f-442c-86f8-fd5bb404dbec" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"73835521473"}) || !ev.OccurredAt.Equal(time.Date(2016, 5, 10, 0, 41, 27, 0, time.UTC)) {
		t.Errorf("ObjectIDs = %v, OccurredAt = %v", ev.ObjectIDs, ev.OccurredAt)
	}
}
