package provider

import (
	"net/url"
	"testing"
)

// Gitea publishes no vector; these requests are signed as go-gitea/gitea
// signs them (services/webhook/deliver.go, addDefaultHeaders: hex
// HMAC-SHA256 of the hook task's PayloadContent under the webhook secret),
// and posted as newDefaultRequest posts them: the JSON itself, a form with
// its payload field, or a GET with its payload query parameter.
const (
	giteaSecret   = "gitea-webhook-secret"
	giteaDelivery = "f6266f16-1bf3-46a5-9ea4-602e06ead473"
	giteaPushBody = `{"ref":"refs/heads/develop","before":"28e1879d029cb852e4844d9c718537df08844e03",` +
		`"after":"bffeb74224043ba2feb48d137756c8a9331c449a","compare_url":"http://localhost:3000/gitea/webhooks/compare/28e1879d029cb852e4844d9c718537df08844e03...bffeb74224043ba2feb48d137756c8a9331c449a",` +
		`"commits":[{"id":"bffeb74224043ba2feb48d137756c8a9331c449a","message":"Webhooks Yay!","url":"http://localhost:3000/gitea/webhooks/commit/bffeb74224043ba2feb48d137756c8a9331c449a"}],` +
		`"repository":{"id":140,"name":"webhooks","full_name":"gitea/webhooks","html_url":"http://localhost:3000/gitea/webhooks"},` +
		`"pusher":{"id":1,"login":"gitea"},"sender":{"id":1,"login":"gitea"}}`
	giteaPullBody = `{"action":"opened","number":7,"pull_request":{"id":312,"number":7,"title":"Add a /version endpoint",` +
		`"html_url":"http://localhost:3000/gitea/webhooks/pulls/7"},` +
		`"repository":{"id":140,"full_name":"gitea/webhooks","html_url":"http://localhost:3000/gitea/webhooks"},"sender":{"id":1,"login":"gitea"}}`
)

func giteaRequest(sig, event, body string) *Request {
	return post(body, "X-Gitea-Signature", sig, "X-Gitea-Event", event, "X-Gitea-Event-Type", event, "X-Gitea-Delivery", giteaDelivery)
}

func TestGiteaVerifiesJSONFormAndGETDeliveries(t *testing.T) {
	sig := sha256Hex(giteaSecret, giteaPushBody)
	keys := secrets("retired-secret", giteaSecret)
	wantVerified(t, adapter(t, "gitea").Verify(giteaRequest(sig, "push", giteaPushBody), keys, nil))

	form := giteaRequest(sig, "push", url.Values{"payload": {giteaPushBody}}.Encode())
	wantVerified(t, adapter(t, "gitea").Verify(form, keys, nil))

	get := giteaRequest(sig, "push", "")
	get.Method, get.Query = "GET", url.Values{"payload": {giteaPushBody}}
	wantVerified(t, adapter(t, "gitea").Verify(get, keys, nil))
}

func TestGiteaRejects(t *testing.T) {
	sig := sha256Hex(giteaSecret, giteaPushBody)
	formBody := url.Values{"payload": {giteaPushBody}}.Encode()
	tamperedForm := url.Values{"payload": {giteaPullBody}}.Encode()
	emptyGet := giteaRequest(sig, "push", giteaPushBody)
	emptyGet.Method = "GET"
	wantAllRejected(t, "gitea", nil, []rejectCase{
		{"tampered body", giteaRequest(sig, "push", giteaPushBody+" "), secrets(giteaSecret)},
		{"tampered form payload", giteaRequest(sig, "push", tamperedForm), secrets(giteaSecret)},
		{"form body signed instead of its payload", giteaRequest(sha256Hex(giteaSecret, formBody), "push", formBody), secrets(giteaSecret)},
		{"GET without a payload parameter", emptyGet, secrets(giteaSecret)},
		{"wrong secret", giteaRequest(sig, "push", giteaPushBody), secrets("another-secret")},
		{"no secrets", giteaRequest(sig, "push", giteaPushBody), nil},
		{"missing header", giteaRequest("", "push", giteaPushBody), secrets(giteaSecret)},
		{"GitHub prefix", giteaRequest("sha256="+sig, "push", giteaPushBody), secrets(giteaSecret)},
		{"form without payload", giteaRequest(sig, "push", "ref=main"), secrets(giteaSecret)},
	})
}

func TestGiteaInterpretsPushAndPullRequest(t *testing.T) {
	ev := oneEvent(t, adapter(t, "gitea"), giteaRequest("", "push", giteaPushBody), nil)
	if ev.Type != "gitea.push" || ev.ProviderEventID != giteaDelivery {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"http://localhost:3000/gitea/webhooks"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}

	form := giteaRequest("", "pull_request", url.Values{"payload": {giteaPullBody}}.Encode())
	ev = oneEvent(t, adapter(t, "gitea"), form, nil)
	if ev.Type != "gitea.pull_request.opened" {
		t.Fatalf("got type %q", ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"http://localhost:3000/gitea/webhooks", "http://localhost:3000/gitea/webhooks/pulls/7"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if string(ev.Data) != giteaPullBody {
		t.Errorf("Data = %s, want the form's payload", ev.Data)
	}
}

func TestGiteaNamesEventsGitHubHasNoNameFor(t *testing.T) {
	// Gitea sends X-Gitea-Event empty for such events (HookEventType.Event).
	r := post(`{"state":"success","sha":"bffeb742"}`, "X-Gitea-Event-Type", "status", "X-Gitea-Delivery", giteaDelivery)
	r.Header["X-Gitea-Event"] = []string{""}
	if ev := oneEvent(t, adapter(t, "gitea"), r, nil); ev.Type != "gitea.status" {
		t.Fatalf("got type %q", ev.Type)
	}
	_, err := adapter(t, "gitea").Interpret(post(giteaPushBody), nil)
	wantPermanent(t, err)
}
