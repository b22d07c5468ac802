package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
)

// eventWith settles a message of body into one event of typ carrying data.
func (e *env) eventWith(tn tenant, typ, body, data string) intake.Event {
	e.t.Helper()
	ctx := context.Background()
	m := e.ingest(tn, "", http.Header{}, body)
	claims, err := e.store.ClaimMessages(ctx, e.clock.Now(), time.Minute, 1)
	if err != nil || len(claims) != 1 || claims[0].Message.ID != m.ID {
		e.t.Fatalf("claim: %+v %v", claims, err)
	}
	now := e.clock.Now()
	ev := intake.Event{
		ID: intake.NewID(), OrgID: tn.org.ID, ConnectionID: tn.conn.ID, MessageID: m.ID, Provider: testProvider,
		Type: typ, Kind: intake.KindEvent, ProviderEventID: "evt_" + m.ID, OccurredAt: now, ReceivedAt: now,
		Data: json.RawMessage(data), State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now, CreatedAt: now,
	}
	if _, err := e.store.SettleMessage(ctx, now, intake.Settlement{
		MessageID: m.ID, Attempt: claims[0].Attempt, To: intake.MessageProcessed, Outcome: intake.OutcomeEvents,
		ProviderEventID: ev.ProviderEventID, Events: []intake.Event{ev},
	}); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	return ev
}

func ids[T any](items []T, id func(T) string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

func eventIDs(l api.List[api.Event]) []string {
	return ids(l.Items, func(e api.Event) string { return e.ID })
}
func messageIDs(l api.List[api.Message]) []string {
	return ids(l.Items, func(m api.Message) string { return m.ID })
}

func TestEventsAndMessagesAreSearchedByMatchWordsAndTime(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	first := e.eventWith(acme, "apitest.invoice.paid", `{"note":"refund asked"}`, `{"customer":{"id":"cus_1"},"amount":1200,"tags":["vip"]}`)
	mid := e.clock.Now()
	second := e.eventWith(acme, "apitest.charge.failed", `plain refund`, `{"customer":{"id":"cus_2"},"failure":"Card declined"}`)
	e.eventWith(globex, "apitest.invoice.paid", `{"note":"refund"}`, `{"customer":{"id":"cus_1"}}`)

	get := func(path string, q url.Values) api.List[api.Event] {
		return must[api.List[api.Event]](e, 200, "GET", path+"?"+q.Encode(), acme.org.APIKey, nil)
	}
	for _, c := range []struct {
		q    url.Values
		want []string
	}{
		{url.Values{"match": {`{"customer":{"id":"cus_1"}}`}}, []string{first.ID}},
		{url.Values{"match": {`{"tags":["vip"],"amount":1200}`}}, []string{first.ID}},
		{url.Values{"match": {`{"amount":"1200"}`}}, []string{}},
		{url.Values{"q": {"DECLINED card"}}, []string{second.ID}},
		{url.Values{"q": {"cus_"}}, []string{second.ID, first.ID}},
		{url.Values{"q": {"zebra"}}, []string{}},
		{url.Values{"q": {"cus_"}, "type": {"apitest.invoice.paid"}}, []string{first.ID}},
		{url.Values{"q": {"cus_"}, "since": {mid.Format(time.RFC3339)}}, []string{second.ID}},
		{url.Values{"q": {"cus_"}, "until": {mid.Format(time.RFC3339)}}, []string{first.ID}},
	} {
		if got := eventIDs(get("/api/v1/events", c.q)); !slices.Equal(got, c.want) {
			t.Errorf("events?%s = %v, want %v", c.q.Encode(), got, c.want)
		}
	}
	msgs := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?q=REFUND&match="+url.QueryEscape(`{"customer":{"id":"cus_1"}}`), acme.org.APIKey, nil)
	if got := messageIDs(msgs); !slices.Equal(got, []string{first.MessageID}) {
		t.Errorf("messages with refund and cus_1 = %v, want %v", got, first.MessageID)
	}
	msgs = must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?q=plain&type=apitest.charge.failed", acme.org.APIKey, nil)
	if got := messageIDs(msgs); !slices.Equal(got, []string{second.MessageID}) {
		t.Errorf("messages with plain of type charge.failed = %v, want %v", got, second.MessageID)
	}

	for _, bad := range []struct{ path, want string }{
		{"/api/v1/events?match=" + url.QueryEscape(`{"customer":`), "match must be a JSON object"},
		{"/api/v1/events?match=" + url.QueryEscape(`["cus_1"]`), "match must be a JSON object"},
		{"/api/v1/messages?match=cus_1", "match must be a JSON object"},
		{"/api/v1/events?since=yesterday", "since must be an RFC 3339 time"},
		{"/api/v1/messages?until=2026-13-01", "until must be an RFC 3339 time"},
		{"/api/v1/events?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z", "since must be before until"},
		{"/api/v1/events?q=" + strings.Repeat("w+", intake.MaxSearchWords+1), "at most 10 words"},
		{"/api/v1/events?q=zebra&q=lion", "given 2 times"},
	} {
		wantError(t, e.do("GET", bad.path, acme.org.APIKey, nil), 400, intake.EINVALID, bad.want)
	}
}

// TestEveryListRefusesAQueryParameterItDoesNotTake: a misspelt filter
// (?q= where there was none, ?endpoint= for ?endpoint_id=) used to list
// everything; each list now answers 400 naming it.
func TestEveryListRefusesAQueryParameterItDoesNotTake(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	n := 0
	for _, pattern := range api.New(api.Config{Control: control.New(control.Config{Store: e.store, Sealer: e.sealer}), Wakes: e.store}).Routes() {
		method, path, _ := strings.Cut(pattern, " ")
		if method != http.MethodGet || strings.Contains(path, "{") {
			continue
		}
		n++
		wantError(t, e.do("GET", path+"?zebra=1", staffToken, nil), 400, intake.EINVALID, `unknown query parameter "zebra"`)
	}
	if n < 10 {
		t.Fatalf("checked %d lists", n)
	}
	wantError(t, e.do("GET", "/api/v1/messages?endpoint="+acme.ep.ID, acme.org.APIKey, nil), 400, intake.EINVALID, "endpoint_id")
	must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?endpoint_id="+acme.ep.ID+"&limit=5", acme.org.APIKey, nil)
}

func TestABulkReplayAndReRouteActOnTheSearchAndTheAuditNamesIt(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	hit := e.eventWith(acme, "apitest.invoice.paid", `{"note":"refund"}`, `{"customer":{"id":"cus_1"}}`)
	miss := e.eventWith(acme, "apitest.invoice.paid", `{"note":"refund"}`, `{"customer":{"id":"cus_2"}}`)
	flaky := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("flaky", "apitest.*"))
	must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+flaky.ID, acme.org.APIKey, `{"retry": {"attempts": 1}}`)
	for _, ev := range []intake.Event{hit, miss} {
		e.route(ev, intake.EventDead, intake.Delivery{ConsumerID: flaky.ID, Outcome: intake.DeliveryRetry, StatusCode: 503})
	}

	// A bulk replay needs a search, and takes at most 1000 messages.
	wantError(t, e.do("POST", "/api/v1/messages/replay", acme.org.APIKey, api.ReplayRequest{}), 400, intake.EINVALID, "needs a search")
	wantError(t, e.do("POST", "/api/v1/messages/replay", acme.org.APIKey, `{"match":"cus_1"}`), 400, intake.EINVALID, "match must be a JSON object")
	got := must[api.Count](e, 200, "POST", "/api/v1/messages/replay", acme.org.APIKey,
		api.ReplayRequest{Match: json.RawMessage(`{"customer":{"id":"cus_1"}}`), Q: "refund"})
	if got.Count != 1 {
		t.Fatalf("replayed %d, want 1", got.Count)
	}
	replays := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?state=queued", acme.org.APIKey, nil)
	if len(replays.Items) != 1 || replays.Items[0].ReplayOf != hit.MessageID {
		t.Fatalf("queued after the replay: %+v, want one replay of %s", replays.Items, hit.MessageID)
	}

	got = must[api.Count](e, 200, "POST", "/api/v1/events/reroute", acme.org.APIKey,
		api.RerouteRequest{State: intake.EventDead, Match: json.RawMessage(`{"customer":{"id":"cus_1"}}`)})
	if got.Count != 1 {
		t.Fatalf("re-routed %d, want 1", got.Count)
	}
	if ev := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+hit.ID, acme.org.APIKey, nil); ev.State != "pending" {
		t.Fatalf("the matching event is %s, want pending", ev.State)
	}
	if ev := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+miss.ID, acme.org.APIKey, nil); ev.State != "dead" {
		t.Fatalf("the other event is %s, want dead", ev.State)
	}

	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	found := map[string]string{}
	for _, a := range audit.Items {
		found[a.Action+" "+a.TargetID] = a.Detail
	}
	if d := found["message.replay "+hit.MessageID]; !strings.Contains(d, `match={"customer":{"id":"cus_1"}}`) || !strings.Contains(d, `q="refund"`) {
		t.Errorf("the replay's audit entry reads %q; it should name the search", d)
	}
	if d := found["event.reroute "+hit.ID]; !strings.Contains(d, `state=dead match={"customer":{"id":"cus_1"}}`) {
		t.Errorf("the re-route's audit entry reads %q; it should name the search", d)
	}
	if _, ok := found["event.reroute "+miss.ID]; ok {
		t.Error("the event the search did not select was re-routed")
	}
}
