package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/token"
)

func TestReplayRoutesAreScopedAndTheWindowIsBounded(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	m := e.ingest(acme, "", http.Header{}, `{"n":1}`)

	wantError(t, e.do("POST", "/api/v1/messages/"+m.ID+"/replay", globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	replay := must[struct {
		ID       string `json:"id"`
		ReplayOf string `json:"replay_of"`
	}](e, 201, "POST", "/api/v1/messages/"+m.ID+"/replay", acme.org.APIKey, nil)
	if replay.ID == m.ID || replay.ReplayOf != m.ID {
		t.Fatalf("replay %+v", replay)
	}
	now := e.clock.Now()
	path := "/api/v1/endpoints/" + acme.ep.ID + "/replay"
	wantError(t, e.do("POST", path, acme.org.APIKey, api.ReplayWindowRequest{Since: now.Add(-8 * 24 * time.Hour), Until: now}),
		400, intake.EINVALID, "at most 7 days")
	wantError(t, e.do("POST", path, globex.org.APIKey, api.ReplayWindowRequest{Since: now.Add(-time.Hour), Until: now.Add(time.Hour)}),
		404, intake.ENOTFOUND, "not found")
	job := must[struct {
		Count    int    `json:"count"`
		ReplayID string `json:"replay_id"`
	}](e, 202, "POST", path, acme.org.APIKey, api.ReplayWindowRequest{Since: now.Add(-time.Hour), Until: now.Add(time.Hour)})
	if job.Count != 1 || job.ReplayID == "" {
		t.Fatalf("window job %+v", job)
	}
	wantError(t, e.do("GET", "/api/v1/replays/"+job.ReplayID, globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	if p := must[api.Replay](e, 200, "GET", "/api/v1/replays/"+job.ReplayID, acme.org.APIKey, nil); p.Total != 1 || p.Done != 0 || p.Finished {
		t.Fatalf("progress before any runner: %+v", p)
	}
	// A runner of another process (on the same store) carries it out;
	// this server reports it.
	runner := &control.ReplayRunner{Store: e.store, Clock: e.clock}
	if ran, err := runner.RunOnce(t.Context()); !ran || err != nil {
		t.Fatalf("runner: ran %v, %v", ran, err)
	}
	if p := must[api.Replay](e, 200, "GET", "/api/v1/replays/"+job.ReplayID, acme.org.APIKey, nil); p.Done != 1 || !p.Finished || p.Error != "" {
		t.Fatalf("progress after the runner: %+v", p)
	}
}

func TestRerouteRoutesAreScoped(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	ev := e.event(acme, "test.thing")
	e.route(ev, intake.EventNoConsumer)
	wantError(t, e.do("POST", "/api/v1/events/"+ev.ID+"/reroute", globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	if n := must[struct{ Count int }](e, 200, "POST", "/api/v1/events/reroute", globex.org.APIKey, api.RerouteRequest{}); n.Count != 0 {
		t.Fatalf("another org re-routed %d events", n.Count)
	}
	must[map[string]any](e, 200, "POST", "/api/v1/events/"+ev.ID+"/reroute", acme.org.APIKey, nil)
	wantError(t, e.do("POST", "/api/v1/events/"+ev.ID+"/reroute", acme.org.APIKey, nil), 409, intake.ECONFLICT, "only dead, no_consumer or filtered")
	wantError(t, e.do("POST", "/api/v1/events/reroute", acme.org.APIKey, api.RerouteRequest{State: intake.EventDelivered}),
		400, intake.EINVALID, "only dead, no_consumer or filtered")
}

func TestErasingAnEndpointsBodiesKeepsTheMessages(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	m := e.ingest(acme, "", http.Header{}, `{"secret":"pii"}`)
	path := "/api/v1/endpoints/" + acme.ep.ID + "/bodies"
	wantError(t, e.do("DELETE", path+"?since=yesterday&until=2100-01-01T00:00:00Z", acme.org.APIKey, nil), 400, intake.EINVALID, "RFC 3339")
	out := must[struct{ Count int }](e, 200, "DELETE", path+"?since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z", acme.org.APIKey, nil)
	if out.Count != 1 {
		t.Fatalf("erased %d", out.Count)
	}
	wantError(t, e.do("GET", "/api/v1/messages/"+m.ID+"/body", acme.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	if detail := must[api.MessageDetail](e, 200, "GET", "/api/v1/messages/"+m.ID, acme.org.APIKey, nil); !detail.BodyExpired {
		t.Fatalf("message after erasure: %+v", detail)
	}
}

func TestDeletedEndpointStopsIngressAndDisappearsButItsMessagesStay(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	m := e.ingest(acme, "", http.Header{}, `{"n":1}`)
	if rec := e.do("DELETE", "/api/v1/endpoints/"+acme.ep.ID, acme.org.APIKey, nil); rec.Code != 204 {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	wantError(t, e.do("GET", "/api/v1/endpoints/"+acme.ep.ID, acme.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	if list := must[api.List[api.Endpoint]](e, 200, "GET", "/api/v1/endpoints", acme.org.APIKey, nil); len(list.Items) != 0 {
		t.Fatalf("listed after delete: %+v", list.Items)
	}
	if _, err := e.store.EndpointByTokenHash(t.Context(), token.Hash(acme.ep.Token)); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("ingress still finds the endpoint: %v", err)
	}
	must[api.MessageDetail](e, 200, "GET", "/api/v1/messages/"+m.ID, acme.org.APIKey, nil)
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	if audit.Items[0].Action != "endpoint.delete" || audit.Items[0].TargetID != acme.ep.ID {
		t.Fatalf("audit %+v", audit.Items[0])
	}
}

func TestMessageDetailListsEverySettledAttempt(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	ev := e.event(acme, "test.thing")
	m := must[api.MessageDetail](e, 200, "GET", "/api/v1/messages/"+ev.MessageID, acme.org.APIKey, nil)
	if len(m.Attempts) != 1 || m.Attempts[0].Attempt != 1 || m.Attempts[0].State != "processed" || m.Attempts[0].Outcome != "events" {
		t.Fatalf("attempts %+v", m.Attempts)
	}
}

// Every bulk action takes dry_run: it answers the count and the first rows
// and changes nothing; the same request without it then does what the dry
// run said.
func TestABulkActionsDryRunAnswersTheCountAndFirstRowsAndChangesNothing(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	now := e.clock.Now()
	var events []intake.Event
	for range 12 {
		ev := e.event(acme, "test.thing")
		e.route(ev, intake.EventNoConsumer)
		events = append(events, ev)
	}
	reroute := api.RerouteRequest{Type: "test.thing", DryRun: true}
	pv := must[api.Bulk[api.Event]](e, 200, "POST", "/api/v1/events/reroute", acme.org.APIKey, reroute)
	if pv.Count != 12 || len(pv.Items) != control.PreviewItems || pv.Items[0].State != string(intake.EventNoConsumer) {
		t.Fatalf("re-route dry run: count %d, %d items", pv.Count, len(pv.Items))
	}
	if ev, _ := e.store.Event(t.Context(), intake.Scope{}, events[0].ID); ev.State != intake.EventNoConsumer {
		t.Fatalf("a dry run re-routed an event: %s", ev.State)
	}
	reroute.DryRun = false
	if n := must[api.Bulk[api.Event]](e, 200, "POST", "/api/v1/events/reroute", acme.org.APIKey, reroute); n.Count != 12 || len(n.Items) != 0 {
		t.Fatalf("re-route: %+v, want 12 and no items", n)
	}

	before := len(must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?limit=500", acme.org.APIKey, nil).Items)
	replay := api.ReplayRequest{EndpointID: acme.ep.ID, DryRun: true}
	mp := must[api.Bulk[api.Message]](e, 200, "POST", "/api/v1/messages/replay", acme.org.APIKey, replay)
	if mp.Count != 12 || len(mp.Items) != control.PreviewItems {
		t.Fatalf("replay dry run: count %d, %d items", mp.Count, len(mp.Items))
	}
	window := api.ReplayWindowRequest{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), DryRun: true}
	wp := must[api.Bulk[api.Message]](e, 200, "POST", "/api/v1/endpoints/"+acme.ep.ID+"/replay", acme.org.APIKey, window)
	if wp.Count != 12 || len(wp.Items) != control.PreviewItems || wp.Items[0].EndpointID != acme.ep.ID {
		t.Fatalf("window replay dry run: count %d, %d items", wp.Count, len(wp.Items))
	}
	if after := len(must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?limit=500", acme.org.APIKey, nil).Items); after != before {
		t.Fatalf("a dry run replayed: %d messages, was %d", after, before)
	}
	viewer := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Role: "viewer"})
	wantError(t, e.do("POST", "/api/v1/messages/replay", viewer.Key, replay), 403, intake.EFORBIDDEN, "needs the operator role")
	wantError(t, e.do("POST", "/api/v1/messages/replay", acme.org.APIKey, api.ReplayRequest{DryRun: true}), 400, intake.EINVALID, "needs a search")
}

func TestABulkRerouteOrReplayPastTheBulkMaxIsRefusedUnlessConfirmedAndThenAnsweredWithItsJob(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	for range 3 {
		e.route(e.event(acme, "test.thing"), intake.EventNoConsumer)
	}
	ctl := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, BulkMax: 2})
	e.h = validating(t, api.New(api.Config{Control: ctl, Wakes: e.store, Clock: e.clock}).Handler())

	wantError(t, e.do("POST", "/api/v1/events/reroute", acme.org.APIKey, api.RerouteRequest{}), 400, intake.EINVALID, "confirm")
	wantError(t, e.do("POST", "/api/v1/messages/replay", acme.org.APIKey, api.ReplayRequest{Type: "test.thing"}),
		400, intake.EINVALID, "selects 3 messages")
	job := must[api.Replay](e, 202, "POST", "/api/v1/events/reroute", acme.org.APIKey, api.RerouteRequest{Confirm: true})
	if job.ID == "" || job.Kind != "reroute" || job.Total != 3 || job.Done != 0 || job.State != "running" {
		t.Fatalf("a confirmed re-route of 3: %+v", job)
	}
	runner := ctl.Runner(nil)
	if ran, err := runner.RunOnce(t.Context()); !ran || err != nil {
		t.Fatalf("runner: ran %v, %v", ran, err)
	}
	p := must[api.Replay](e, 200, "GET", "/api/v1/replays/"+job.ID, acme.org.APIKey, nil)
	if p.Kind != "reroute" || p.State != "done" || p.Done != 3 || !p.Finished || p.EndpointID != "" || p.Since != nil {
		t.Fatalf("the re-route job after its runner: %+v", p)
	}
	if r := must[api.Replay](e, 202, "POST", "/api/v1/messages/replay", acme.org.APIKey, api.ReplayRequest{Type: "test.thing", Confirm: true}); r.Kind != "replay" || r.Total != 3 {
		t.Fatalf("a confirmed replay of 3: %+v", r)
	}
}
