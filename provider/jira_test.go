package provider

import (
	"crypto/sha1"
	"testing"
	"time"
)

// Jira publishes no signing vector; these requests are signed with a known
// secret the way its docs describe: X-Hub-Signature: sha256=<hex HMAC of the body>.
const (
	jiraSecret = "jira admin webhook secret"
	jiraBody   = `{"timestamp":1710000000123,"webhookEvent":"jira:issue_updated","issue_event_type_name":"issue_generic",` +
		`"issue":{"id":"10002","key":"PROJ-7","fields":{"summary":"Fix it"}},"user":{"accountId":"5b10a2844c20165700ede21g"}}`
)

func jiraRequest(sig string, kv ...string) *Request {
	return post(jiraBody, append([]string{"X-Hub-Signature", sig}, kv...)...)
}

func TestJiraVerifiesSignedDelivery(t *testing.T) {
	wantVerified(t, adapter(t, "jira").Verify(jiraRequest("sha256="+sha256Hex(jiraSecret, jiraBody)), secrets("old", jiraSecret), nil))
	// WebSub allows other methods; a sha1 signature is still a signature.
	wantVerified(t, adapter(t, "jira").Verify(jiraRequest("sha1="+hexMAC(sha1.New, jiraSecret, jiraBody)), secrets(jiraSecret), nil))
}

func TestJiraRejects(t *testing.T) {
	sig := "sha256=" + sha256Hex(jiraSecret, jiraBody)
	tampered := jiraRequest(sig)
	tampered.Body = []byte(jiraBody[:len(jiraBody)-1] + ` `)
	wantAllRejected(t, "jira", nil, []rejectCase{
		{"tampered body", tampered, secrets(jiraSecret)},
		{"wrong secret", jiraRequest(sig), secrets("not it")},
		{"no secrets", jiraRequest(sig), nil},
		{"missing header", jiraRequest(""), secrets(jiraSecret)},
		{"unknown method", jiraRequest("md5=" + sig[7:]), secrets(jiraSecret)},
		{"no method", jiraRequest(sig[7:]), secrets(jiraSecret)},
	})
}

func TestJiraInterpretsIssueUpdated(t *testing.T) {
	r := jiraRequest("", "X-Atlassian-Webhook-Identifier", "5b63e5b6-e3c3-41c2-9b15-e3b1c6d0d1f0")
	ev := oneEvent(t, adapter(t, "jira"), r, nil)
	if ev.Type != "jira.issue_updated" || ev.ProviderEventID != "5b63e5b6-e3c3-41c2-9b15-e3b1c6d0d1f0" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"10002", "PROJ-7"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.UnixMilli(1710000000123)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
}

func TestJiraRejectsBodyWithoutWebhookEventPermanently(t *testing.T) {
	_, err := adapter(t, "jira").Interpret(post(`{"issue":{}}`), nil)
	wantPermanent(t, err)
}
