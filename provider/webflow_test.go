package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Webflow's SDK (webflow/js-webflow-api, src/wrapper/WebhooksClient.ts)
// signs "<timestamp>:<body>" but its tests fix no vector; the body below is
// shaped after the form_submission example of Webflow's webhook
// documentation and signed here as the SDK signs it.
const (
	webflowSecret = "webflow-oauth-client-secret"
	webflowBody   = `{"triggerType":"form_submission","payload":{"name":"Contact Us","siteId":"65427cf400e02b306eaa049c","data":{"First Name":"Zaphod","Last Name":"Beeblebrox","email":"zaphod@heartofgold.ai","Phone Number":15550000000},"submittedAt":"2022-09-14T12:35:16.117Z","id":"6321ca84df3949bfc6752327","formId":"65429eadebe8a9f3a30f62d0"}}`
)

func webflowRequest(sig, ts, body string) *Request {
	return post(body, "x-webflow-signature", sig, "x-webflow-timestamp", ts)
}

func webflowSigned(secret string, at time.Time, body string) *Request {
	ts := unixMilli(at)
	return webflowRequest(sha256Hex(secret, ts+":"+body), ts, body)
}

func TestWebflowVerifiesItsSignature(t *testing.T) {
	wantVerified(t, adapter(t, "webflow").Verify(webflowSigned(webflowSecret, received, webflowBody), secrets("an-older-secret", webflowSecret), nil))
}

func TestWebflowJudgesOnlyTheSignaturesAge(t *testing.T) {
	a := adapter(t, "webflow")
	wantVerified(t, a.Verify(webflowSigned(webflowSecret, received.Add(-5*time.Minute), webflowBody), secrets(webflowSecret), nil))
	wantVerified(t, a.Verify(webflowSigned(webflowSecret, received.Add(time.Hour), webflowBody), secrets(webflowSecret), nil))
	wantVerified(t, a.Verify(webflowSigned(webflowSecret, received.Add(-9*time.Minute), webflowBody), secrets(webflowSecret), Config{"tolerance": "10m"}))
}

func TestWebflowRejects(t *testing.T) {
	good := webflowSigned(webflowSecret, received, webflowBody)
	sig, ts := good.Header.Get("x-webflow-signature"), good.Header.Get("x-webflow-timestamp")
	wantAllRejected(t, "webflow", nil, []rejectCase{
		{"body changed by one byte", webflowRequest(sig, ts, strings.Replace(webflowBody, "Zaphod", "Zaphoe", 1)), secrets(webflowSecret)},
		{"timestamp changed", webflowRequest(sig, unixMilli(received.Add(time.Millisecond)), webflowBody), secrets(webflowSecret)},
		{"wrong secret", good, secrets("another-secret")},
		{"no secrets", good, nil},
		{"empty secret", webflowSigned("", received, webflowBody), secrets("")},
		{"missing signature", webflowRequest("", ts, webflowBody), secrets(webflowSecret)},
		{"missing timestamp", webflowRequest(sig, "", webflowBody), secrets(webflowSecret)},
		{"older than 5 minutes", webflowSigned(webflowSecret, received.Add(-5*time.Minute-time.Second), webflowBody), secrets(webflowSecret)},
		{"timestamp in seconds", webflowRequest(sha256Hex(webflowSecret, unix(received)+":"+webflowBody), unix(received), webflowBody), secrets(webflowSecret)},
		{"signed with a dot", webflowRequest(sha256Hex(webflowSecret, ts+"."+webflowBody), ts, webflowBody), secrets(webflowSecret)},
	})
}

func TestWebflowInterpretsAFormSubmission(t *testing.T) {
	ev := oneEvent(t, adapter(t, "webflow"), webflowRequest("", "", webflowBody), nil)
	if ev.ProviderEventID != "form_submission:6321ca84df3949bfc6752327:2022-09-14T12:35:16.117Z" || ev.Type != "webflow.form_submission" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2022, 9, 14, 12, 35, 16, 117e6, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{"6321ca84df3949bfc6752327", "65427cf400e02b306eaa049c"}) {
		t.Errorf("OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
}

func TestWebflowTellsChangesOfOneItemApart(t *testing.T) {
	item := func(updated string) string {
		return `{"triggerType":"collection_item_changed","payload":{"id":"item1","siteId":"s1","collectionId":"c1","lastUpdated":"` + updated + `","fieldData":{"name":"x"}}}`
	}
	a := oneEvent(t, adapter(t, "webflow"), webflowRequest("", "", item("2025-03-14T09:00:00.000Z")), nil)
	b := oneEvent(t, adapter(t, "webflow"), webflowRequest("", "", item("2025-03-14T09:05:00.000Z")), nil)
	if a.ProviderEventID == b.ProviderEventID || a.Type != "webflow.collection_item_changed" || !equalStrings(a.ObjectIDs, []string{"item1", "c1", "s1"}) {
		t.Fatalf("a %+v b %+v", a, b)
	}
	publish := `{"triggerType":"site_publish","payload":{"site":"s1","publishedOn":"2025-03-14T09:00:00.000Z","domains":["example.com"]}}`
	p := oneEvent(t, adapter(t, "webflow"), webflowRequest("", "", publish), nil)
	if !strings.HasPrefix(p.ProviderEventID, "webflow:") || p.Type != "webflow.site_publish" {
		t.Fatalf("site_publish %+v", p)
	}
}

func TestWebflowRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"payload":{}}`, "[]"} {
		_, err := adapter(t, "webflow").Interpret(webflowRequest("", "", body), nil)
		wantPermanent(t, err)
	}
}
