package provider

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// ClickUp's published example signature is cut short, so these are computed
// as https://developer.clickup.com/docs/webhooksignature describes (hex
// HMAC-SHA256 of the body under the webhook's secret) with Node's
// crypto.createHmac, as the page's example does: the page's example body,
// and a status change shaped like ClickUp's taskStatusUpdated example.
const (
	clickupSecret       = "clickup-webhook-secret"
	clickupDocBody      = `{"webhook_id":"7689a169-a000-4985-8676-6902b96d6627","event":"taskCreated","task_id":"c0j"}`
	clickupDocSignature = "ab4b8cec8258a06b5eeb53871cff3879ce21cc76d4c84189ec82a94ba4e7a69e"
	clickupStatusBody   = `{"event":"taskStatusUpdated","history_items":[{"id":"2800787326384985213","type":1,"date":"1642736394042","field":"status","parent_id":"162641062","data":{"status_type":"custom"},"source":null,"user":{"id":183,"username":"John","email":"john@company.com"},"before":{"status":"to do","type":"open"},"after":{"status":"in progress","type":"custom"}}],"task_id":"1vj38vv","webhook_id":"7fa3ec74-69a8-4530-a251-8a13730bd204"}`
	clickupStatusSig    = "17e5a584d7cb91742fc3b25faa9620d42ecab78479c1933773bc7315226303d7"
)

func clickupRequest(sig, body string) *Request { return post(body, "X-Signature", sig) }

func TestClickUpVerifiesDocumentedScheme(t *testing.T) {
	a := adapter(t, "clickup")
	wantVerified(t, a.Verify(clickupRequest(clickupDocSignature, clickupDocBody), secrets(clickupSecret), nil))
	wantVerified(t, a.Verify(clickupRequest(clickupStatusSig, clickupStatusBody), secrets(clickupSecret), nil))
}

func TestClickUpAcceptsRotatedSecret(t *testing.T) {
	wantVerified(t, adapter(t, "clickup").Verify(clickupRequest(clickupDocSignature, clickupDocBody), secrets("old", clickupSecret), nil))
}

func TestClickUpRejects(t *testing.T) {
	keys := secrets(clickupSecret)
	wantAllRejected(t, "clickup", nil, []rejectCase{
		{"tampered body", clickupRequest(clickupDocSignature, clickupStatusBody), keys},
		{"wrong secret", clickupRequest(clickupDocSignature, clickupDocBody), secrets("other")},
		{"no secrets", clickupRequest(clickupDocSignature, clickupDocBody), nil},
		{"empty secret", clickupRequest(sha256Hex("", clickupDocBody), clickupDocBody), secrets("")},
		{"missing header", clickupRequest("", clickupDocBody), keys},
		{"the docs' cut signature", clickupRequest("f7bc83f430538424b13298e6aa6", clickupDocBody), keys},
	})
}

func TestClickUpInterpretsStatusChangeWithHistoryID(t *testing.T) {
	ev := oneEvent(t, adapter(t, "clickup"), clickupRequest("", clickupStatusBody), nil)
	if ev.ProviderEventID != "taskStatusUpdated:2800787326384985213" || ev.Type != "clickup.taskStatusUpdated" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"1vj38vv"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.UnixMilli(1642736394042)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != clickupStatusBody || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v)", ev.Data, ev.DataTruncated)
	}
}

func TestClickUpLeavesEventWithoutHistoryToBodyDigest(t *testing.T) {
	ev := oneEvent(t, adapter(t, "clickup"), clickupRequest("", clickupDocBody), nil)
	if ev.ProviderEventID != "" || ev.Type != "clickup.taskCreated" || !equalStrings(ev.ObjectIDs, []string{"c0j"}) {
		t.Fatalf("got id %q type %q objects %v", ev.ProviderEventID, ev.Type, ev.ObjectIDs)
	}
}

func TestClickUpRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"task_id":"c0j"}`, "[]"} {
		_, err := adapter(t, "clickup").Interpret(clickupRequest("", body), nil)
		wantPermanent(t, err)
	}
}
