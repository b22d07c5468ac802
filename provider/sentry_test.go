package provider

import (
	"crypto/sha256"
	"testing"
	"time"
)

// Sentry publishes no vector; these requests are signed as
// getsentry/sentry signs them (src/sentry/sentry_apps/models/sentry_app.py,
// build_signature: hex HMAC-SHA256 of the body under the client secret),
// with bodies shaped as AppPlatformEvent.body writes them
// (src/sentry/sentry_apps/api/serializers/app_platform_event.py).
const (
	sentrySecret    = "6a9b9e4f0c2d4e1fa7c3b2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1"
	sentryIssueBody = `{"action": "created", "installation": {"uuid": "a8e5d37a-696c-4c54-adb5-b3f28d64c7de"}, ` +
		`"data": {"issue": {"id": "1117540176", "shortId": "EXAMPLE-1", "title": "Error: Example", "status": "unresolved", ` +
		`"firstSeen": "2025-03-14T09:26:40.391000Z", "project": {"id": "1", "slug": "example"}}}, ` +
		`"actor": {"type": "application", "id": "sentry", "name": "Sentry"}}`
	sentryErrorBody = `{"action": "created", "installation": {"uuid": "a8e5d37a-696c-4c54-adb5-b3f28d64c7de"}, ` +
		`"data": {"error": {"event_id": "be1c1e9f1fa14e2b9a1ed0ce1bd7c8e4", "issue_id": "1117540176", "datetime": "2025-03-14T09:26:41.123000Z", ` +
		`"message": "TypeError: x is undefined"}}, "actor": {"type": "application", "id": "sentry", "name": "Sentry"}}`
)

func sentryRequest(sig, resource, body string) *Request {
	return post(body, "Sentry-Hook-Signature", sig, "Sentry-Hook-Resource", resource,
		"Request-ID", "c4e8b4d3a0f54f0ea0b6d2c5f6e7a8b9", "Sentry-Hook-Timestamp", unix(received))
}

func TestSentryVerifiesSignedDeliveryWithRotatedSecrets(t *testing.T) {
	r := sentryRequest(sha256Hex(sentrySecret, sentryIssueBody), "issue", sentryIssueBody)
	wantVerified(t, adapter(t, "sentry").Verify(r, secrets("retired-client-secret", sentrySecret), nil))
}

func TestSentryDoesNotJudgeTheUnsignedTimestamp(t *testing.T) {
	// Sentry-Hook-Timestamp is outside the signature: anyone could set it,
	// so it neither admits nor refuses a request.
	r := sentryRequest(sha256Hex(sentrySecret, sentryIssueBody), "issue", sentryIssueBody)
	r.Header.Set("Sentry-Hook-Timestamp", "1")
	wantVerified(t, adapter(t, "sentry").Verify(r, secrets(sentrySecret), Config{"tolerance": "1s"}))
}

func TestSentryRejects(t *testing.T) {
	sig := sha256Hex(sentrySecret, sentryIssueBody)
	wantAllRejected(t, "sentry", nil, []rejectCase{
		{"tampered body", sentryRequest(sig, "issue", sentryIssueBody+" "), secrets(sentrySecret)},
		{"wrong secret", sentryRequest(sig, "issue", sentryIssueBody), secrets("another-client-secret")},
		{"no secrets", sentryRequest(sig, "issue", sentryIssueBody), nil},
		{"missing header", sentryRequest("", "issue", sentryIssueBody), secrets(sentrySecret)},
		{"prefixed", sentryRequest("sha256="+sig, "issue", sentryIssueBody), secrets(sentrySecret)},
		{"base64 instead of hex", sentryRequest(b64MAC(sha256.New, sentrySecret, sentryIssueBody), "issue", sentryIssueBody), secrets(sentrySecret)},
	})
}

func TestSentryInterpretsIssueAndError(t *testing.T) {
	ev := oneEvent(t, adapter(t, "sentry"), sentryRequest("", "issue", sentryIssueBody), nil)
	if ev.Type != "sentry.issue.created" || ev.ProviderEventID != "issue:created:1117540176" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"1117540176"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}

	ev = oneEvent(t, adapter(t, "sentry"), sentryRequest("", "error", sentryErrorBody), nil)
	if ev.Type != "sentry.error.created" || ev.ProviderEventID != "error:created:be1c1e9f1fa14e2b9a1ed0ce1bd7c8e4" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"1117540176"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.Date(2025, 3, 14, 9, 26, 41, 123e6, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
}

func TestSentryIDsOnlyEventsThatHappenOncePerObject(t *testing.T) {
	cases := []struct{ resource, body, typ, id string }{
		{"event_alert", `{"action":"triggered","data":{"event":{"event_id":"e1","issue_id":"9"},"triggered_rule":"High volume"}}`,
			"sentry.event_alert.triggered", "event_alert:triggered:e1:High volume"},
		{"installation", `{"action":"deleted","data":{"installation":{"uuid":"u1"}}}`, "sentry.installation.deleted", "installation:deleted:u1"},
		{"comment", `{"action":"created","data":{"comment_id":1234,"issue_id":9,"comment":"hi"}}`, "sentry.comment.created", "comment:created:1234"},
		// These recur for one object and carry nothing naming the occurrence.
		{"issue", `{"action":"resolved","data":{"issue":{"id":"1117540176","status":"resolved"}}}`, "sentry.issue.resolved", ""},
		{"comment", `{"action":"updated","data":{"comment_id":1234,"issue_id":9,"comment":"edited"}}`, "sentry.comment.updated", ""},
		{"metric_alert", `{"action":"critical","data":{"metric_alert":{"id":"42"}}}`, "sentry.metric_alert.critical", ""},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			ev := oneEvent(t, adapter(t, "sentry"), sentryRequest("", c.resource, c.body), nil)
			if ev.Type != c.typ || ev.ProviderEventID != c.id {
				t.Fatalf("got type %q id %q, want %q %q", ev.Type, ev.ProviderEventID, c.typ, c.id)
			}
		})
	}
}

func TestSentryRefusesAnUnnamedResource(t *testing.T) {
	_, err := adapter(t, "sentry").Interpret(post(sentryIssueBody), nil)
	wantPermanent(t, err)
}
