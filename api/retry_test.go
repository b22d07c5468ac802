package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestRetryNowMakesAWaitingEventDueAndAnswersItsCount(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	attempts, base := 5, "1h"
	cons := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, api.CreateConsumerRequest{Name: "crm", App: "crm",
		URL: "http://127.0.0.1:9/crm", EventTypes: []string{"*"},
		ConsumerControls: api.ConsumerControls{Retry: &api.RetryPolicy{Attempts: &attempts, Base: &base}}})
	ev := e.event(acme, "test.thing")
	e.route(ev, intake.EventRetrying, intake.Delivery{ConsumerID: cons.ID, Outcome: intake.DeliveryRetry, StatusCode: 500, Error: "consumer answered 500"})
	viewer := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Role: "viewer"})
	due := func() int {
		t.Helper()
		claims, err := e.store.ClaimRoutes(context.Background(), e.clock.Now(), time.Minute, intake.Calls(100))
		if err != nil {
			t.Fatal(err)
		}
		return len(claims)
	}
	if n := due(); n != 0 {
		t.Fatalf("%d routes due within the hour's backoff", n)
	}

	event, consumer := "/api/v1/events/"+ev.ID+"/retry", "/api/v1/consumers/"+cons.ID+"/retry"
	wantError(t, e.do("POST", event, viewer.Key, nil), 403, intake.EFORBIDDEN, "needs the operator role")
	wantError(t, e.do("POST", consumer, viewer.Key, api.RetryRequest{DryRun: true}), 403, intake.EFORBIDDEN, "needs the operator role")
	wantError(t, e.do("POST", event, globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	wantError(t, e.do("POST", consumer, globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	wantError(t, e.do("POST", consumer, acme.org.APIKey, `{"dry_run":"yes"}`), 400, intake.EINVALID, "dry_run")

	dry := must[api.Retried](e, 200, "POST", consumer, acme.org.APIKey, api.RetryRequest{DryRun: true})
	if dry.Count != 1 || len(dry.Items) != 1 || dry.Items[0].ID != ev.ID {
		t.Fatalf("dry run = %+v", dry)
	}
	if n := due(); n != 0 {
		t.Fatalf("a dry run made %d routes due", n)
	}
	if r := must[api.Retried](e, 200, "POST", event, acme.org.APIKey, nil); r.Count != 1 || r.Items != nil {
		t.Fatalf("retry = %+v, want a count of 1 and no items", r)
	}
	if n := due(); n != 1 {
		t.Fatalf("%d routes due after the retry, want 1", n)
	}
	// Its call is being made: nothing is left to retry.
	if r := must[api.Retried](e, 200, "POST", consumer, acme.org.APIKey, api.RetryRequest{}); r.Count != 0 {
		t.Fatalf("retry with the call in flight = %+v", r)
	}
}

func TestRetryOfADeadEventIsAConflictNamingTheReroute(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	ev := e.event(acme, "test.thing")
	e.route(ev, intake.EventNoConsumer)
	wantError(t, e.do("POST", "/api/v1/events/"+ev.ID+"/retry", acme.org.APIKey, nil), 409, intake.ECONFLICT,
		"POST /api/v1/events/"+ev.ID+"/reroute")
}

func TestAConsumersStatsHaveAnHourlyAndADailyWindow(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	cons := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, api.CreateConsumerRequest{Name: "crm", App: "crm",
		URL: "http://127.0.0.1:9/crm", EventTypes: []string{"*"}})
	ev := e.event(acme, "test.thing")
	e.route(ev, intake.EventDelivered, intake.Delivery{ConsumerID: cons.ID, Outcome: intake.DeliveryHandled, StatusCode: 200, Latency: 12 * time.Millisecond})
	path := "/api/v1/consumers/" + cons.ID + "/stats"
	day := must[api.ConsumerStats](e, 200, "GET", path, acme.org.APIKey, nil)
	last := day.Buckets[len(day.Buckets)-1]
	if day.Window != "24h" || len(day.Buckets) != 24 || !last.Start.Equal(e.clock.Now().Truncate(time.Hour)) ||
		last.Delivered != 1 || last.Failed != 0 || last.P50Ms != 12 || last.P99Ms != 12 {
		t.Fatalf("24h stats = %+v", day)
	}
	week := must[api.ConsumerStats](e, 200, "GET", path+"?window=7d", acme.org.APIKey, nil)
	if week.Window != "7d" || len(week.Buckets) != 7 || week.Buckets[6].Delivered != 1 {
		t.Fatalf("7d stats = %+v", week)
	}
	wantError(t, e.do("GET", path+"?window=1y", acme.org.APIKey, nil), 400, intake.EINVALID, "window must be 24h or 7d")
}
