package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// A consumer whose call failed reads failing, with its route retrying and
// the time of its next attempt; the list and the overview say so too.
func TestAFailingConsumerShowsItsRetryAndNextAttempt(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	cs := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{
		Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks", EventTypes: []string{"*"}})
	e.send(acme, "invoice.paid")

	// The router's part, by hand: fan the event out to the consumer and
	// settle its first call as failed, due again in an hour.
	ctx, now := context.Background(), time.Now()
	claims, err := e.store.ClaimEvents(ctx, now, time.Minute, 10)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claimed %+v %v", claims, err)
	}
	if _, err := e.store.FanOut(ctx, now, intake.FanOut{EventID: claims[0].Event.ID, Attempt: claims[0].Attempt,
		Routes: []intake.FanOutRoute{{ConsumerID: cs.ID}}}); err != nil {
		t.Fatal(err)
	}
	calls, err := e.store.ClaimRoutes(ctx, now, time.Minute, intake.Calls(10))
	if err != nil || len(calls) != 1 {
		t.Fatalf("calls %+v %v", calls, err)
	}
	c := calls[0]
	d := intake.Delivery{ID: intake.NewID(), OrgID: acme.org.ID, EventID: c.Event.ID, ConsumerID: cs.ID, Attempt: c.Attempt,
		Outcome: intake.DeliveryRetry, StatusCode: 503, Error: "503 Service Unavailable", At: now}
	if _, err := e.store.SettleRoute(ctx, now, intake.RouteSettlement{EventID: c.Event.ID, ConsumerID: cs.ID, Attempt: c.Attempt,
		Delivery: &d, Called: true}, intake.Backoff{Base: time.Hour, Max: time.Hour}); err != nil {
		t.Fatal(err)
	}

	b := e.browser()
	b.signIn(acme.org.APIKey)
	page := b.get("/console/consumers/" + cs.ID).body
	for _, want := range []string{`id="health-state">failing<`, "0 due · 1 retrying · 0 held · 0 in flight"} {
		if !strings.Contains(page, want) {
			t.Errorf("the consumer's page lacks %q", want)
		}
	}
	// "in 59m" or "in 1h", by the second the page is read.
	if !strings.Contains(page, "(in 59m)") && !strings.Contains(page, "(in 1h)") {
		t.Errorf("the consumer's page does not say the next attempt is in an hour:\n%s", section(page, `id="next-attempt"`))
	}
	if list := b.get("/console/consumers").body; !strings.Contains(list, `<span class="state state-failing">failing</span>`) {
		t.Errorf("the consumers list does not say the consumer is failing:\n%s", section(list, `id="consumers"`))
	}
	// The overview counts the event retrying, and its alarm is the issue
	// the failed call opened, naming the consumer; the Issues page lists it
	// and the nav counts it.
	o := b.get("/console/").body
	if !strings.Contains(o, `id="retrying-events">1<`) || !strings.Contains(o, "Consumer billing: consumer answered 5xx: 1 failure over 1 event") {
		t.Errorf("the overview does not count the event retrying and name the consumer's issue:\n%s", o)
	}
	issues := b.get("/console/issues").body
	if !strings.Contains(issues, "Consumer billing: consumer answered 5xx") || !strings.Contains(issues, `title="open issues">1<`) {
		t.Errorf("the Issues page does not list the issue, or the nav does not count it:\n%s", section(issues, "<nav"))
	}

	// Acknowledged from its page, it leaves the open list and the nav's
	// count; reopened, it is back.
	list := apiCall[api.List[api.Issue]](e, acme.org.APIKey, "GET", "/api/v1/issues?status=open", nil)
	if len(list.Items) != 1 {
		t.Fatalf("open issues %+v", list.Items)
	}
	id := list.Items[0].ID
	if p := b.get("/console/issues/" + id).body; !strings.Contains(p, `id="retry"`) || !strings.Contains(p, `id="set-acknowledged"`) {
		t.Fatalf("the issue's page lacks its actions:\n%s", section(p, "<main"))
	}
	if p := b.post("/console/issues/"+id+"/status", url.Values{"csrf": {b.csrf()}, "status": {"acknowledged"}}); p.status != 303 {
		t.Fatalf("acknowledging answered %d: %s", p.status, p.body)
	}
	if p := b.get("/console/issues/" + id).body; !strings.Contains(p, `id="status">acknowledged<`) || strings.Contains(p, `title="open issues"`) {
		t.Errorf("after acknowledging, the page reads:\n%s", section(p, "<nav"))
	}
	if p := b.get("/console/issues").body; !strings.Contains(p, `id="no-issues"`) {
		t.Errorf("an acknowledged issue is listed as open")
	}
	b.post("/console/issues/"+id+"/status", url.Values{"csrf": {b.csrf()}, "status": {"open"}})
	if p := b.get("/console/issues").body; !strings.Contains(p, `data-id="`+id+`"`) {
		t.Errorf("the reopened issue is not listed as open")
	}
}

// section is the part of a page from marker on, for a failure's message.
func section(page, marker string) string {
	i := strings.Index(page, marker)
	if i < 0 {
		return page
	}
	return page[i:min(len(page), i+600)]
}
