package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/console"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
)

// transports is one control plane with the admin API and the console in
// front of it, as serve wires them.
type transports struct {
	t     *testing.T
	url   string
	store *sqlite.Store
	ctl   *control.Plane
	web   *http.Client // a console session, signed in
	csrf  string
	key   string // the org's API key, used by both transports
	org   string
}

const staff = "staff-token-for-parity"

func newTransports(t *testing.T) *transports {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	sealer := testkit.Sealer(t)
	srv := httptest.NewServer(nil)
	ctl := control.New(control.Config{Store: st, Sealer: sealer, StaffToken: staff, PublicURL: srv.URL})
	mux := http.NewServeMux()
	mux.Handle("/api/", api.New(api.Config{Control: ctl, Wakes: st, PublicURL: srv.URL}).Handler())
	mux.Handle("/console/", console.New(console.Config{Control: ctl, PublicURL: srv.URL}).Handler())
	srv.Config.Handler = mux
	t.Cleanup(func() { srv.Close(); st.Close() })
	tr := &transports{t: t, url: srv.URL, store: st, ctl: ctl}
	var org api.Org
	tr.api("POST", "/api/v1/orgs", staff, api.CreateOrgRequest{Name: "acme"}, &org, http.StatusCreated)
	tr.key, tr.org = org.APIKey, org.ID

	jar, _ := cookiejar.New(nil)
	tr.web = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if status, _ := tr.form("/console/login", url.Values{"token": {tr.key}}); status != http.StatusSeeOther {
		t.Fatalf("console sign-in: %d", status)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(tr.page("/console/consumers"))
	if m == nil {
		t.Fatal("no CSRF token on the console page")
	}
	tr.csrf = m[1]
	return tr
}

// api calls the admin API with tok and decodes its answer into out.
func (tr *transports) api(method, path, tok string, in, out any, want int) {
	tr.t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(method, tr.url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		tr.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			tr.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// form posts a console form from the console's own page.
func (tr *transports) form(path string, v url.Values) (int, string) {
	tr.t.Helper()
	if tr.csrf != "" {
		v.Set("csrf", tr.csrf)
	}
	req, _ := http.NewRequest("POST", tr.url+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", tr.url)
	resp, err := tr.web.Do(req)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func (tr *transports) page(path string) string {
	tr.t.Helper()
	resp, err := tr.web.Get(tr.url + path)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}

// lastAudit is the newest audit entry, with its ids blanked so entries of
// the same action on different rows compare equal.
func (tr *transports) lastAudit() intake.AuditEntry {
	tr.t.Helper()
	page, err := tr.store.ListAudit(context.Background(), intake.Scope{}, intake.AuditFilter{Limit: 1})
	if err != nil || len(page.Items) != 1 {
		tr.t.Fatalf("audit: %+v %v", page.Items, err)
	}
	a := page.Items[0]
	return intake.AuditEntry{OrgID: a.OrgID, Actor: a.Actor, Action: a.Action, TargetType: a.TargetType,
		Detail: uuids.ReplaceAllString(a.Detail, "<id>")}
}

var uuids = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestEachActionGivesTheSameResultAndAuditRowThroughTheAPIAndTheConsole
// performs every operator action the console offers once through each
// transport, with the same org key, and compares what each did to the
// store and the audit entry each wrote.
func TestEachActionGivesTheSameResultAndAuditRowThroughTheAPIAndTheConsole(t *testing.T) {
	tr := newTransports(t)
	ctx := context.Background()
	sc := intake.Scope{OrgID: tr.org}

	type outcome struct {
		state any               // what the action left, ids blanked
		audit intake.AuditEntry // the entry it wrote
	}
	type action struct {
		name    string
		api     func() string // performs it through the API, returns the row's id
		console func() string
		state   func(id string) any
	}
	connState := func(id string) any {
		c, err := tr.store.Connection(ctx, sc, id)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := tr.ctl.SecretCount(c)
		return []any{c.OrgID, c.Provider, c.Name, string(c.Config), n}
	}
	var conns [2]string
	endpointState := func(id string) any {
		e, err := tr.store.Endpoint(ctx, sc, id)
		if err != nil {
			t.Fatal(err)
		}
		return []any{e.OrgID, e.Provider, e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst}
	}
	var eps [2]string
	consumerState := func(id string) any {
		c, err := tr.store.Consumer(ctx, sc, id)
		if err != nil {
			t.Fatal(err)
		}
		return []any{c.OrgID, c.Name, c.App, c.URL, c.EventTypes, c.Completion, c.Enabled}
	}
	var consumers [2]string
	msg := &intake.Message{ID: intake.NewID(), OrgID: tr.org, Method: "POST", Body: []byte(`{"id":"evt_1"}`),
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, ReceivedAt: time.Now(), NextAttemptAt: time.Now()}
	messageState := func(id string) any {
		m, err := tr.store.Message(ctx, sc, id)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tr.store.MessageBody(ctx, sc, id)
		return []any{m.State, m.ReplayOf == msg.ID, string(b.Body), err}
	}
	replays := func() string {
		page, _ := tr.store.ListMessages(ctx, sc, intake.MessageFilter{Limit: 1})
		return page.Items[0].ID
	}

	actions := []action{
		{"create a connection",
			func() string {
				var c api.Connection
				tr.api("POST", "/api/v1/connections", tr.key, api.CreateConnectionRequest{Provider: "stripe", Name: "billing",
					Secrets: []string{"whsec_one", "whsec_two"}}, &c, http.StatusCreated)
				conns[0] = c.ID
				return c.ID
			},
			func() string {
				tr.form("/console/connections", url.Values{"provider": {"stripe"}, "name": {"billing"}, "secrets": {"whsec_one\nwhsec_two"}})
				all, _ := tr.store.ListConnections(ctx, sc)
				conns[1] = all[len(all)-1].ID
				return conns[1]
			}, connState},
		{"create an endpoint",
			func() string {
				var e api.Endpoint
				rate, burst := 50.0, 100
				tr.api("POST", "/api/v1/endpoints", tr.key, api.CreateEndpointRequest{ConnectionID: conns[0], RatePerSec: &rate, Burst: &burst},
					&e, http.StatusCreated)
				eps[0] = e.ID
				return e.ID
			},
			func() string {
				tr.form("/console/endpoints", url.Values{"connection": {conns[1]}, "rate_per_sec": {"50"}, "burst": {"100"}})
				all, _ := tr.store.ListEndpoints(ctx, sc)
				eps[1] = all[len(all)-1].ID
				return eps[1]
			}, endpointState},
		{"disable an endpoint",
			func() string {
				off := false
				tr.api("PATCH", "/api/v1/endpoints/"+eps[0], tr.key, api.UpdateEndpointRequest{Enabled: &off}, nil, http.StatusOK)
				return eps[0]
			},
			func() string {
				tr.form("/console/endpoints/"+eps[1]+"/enabled", url.Values{"enabled": {"false"}})
				return eps[1]
			}, endpointState},
		{"register a consumer",
			func() string {
				var c api.Consumer
				tr.api("POST", "/api/v1/consumers", tr.key, api.CreateConsumerRequest{Name: "ledger", App: "ledger",
					URL: "http://127.0.0.1:9/hooks", EventTypes: []string{"stripe.invoice.*", "stripe.charge.succeeded"}, Completion: true},
					&c, http.StatusCreated)
				consumers[0] = c.ID
				return c.ID
			},
			func() string {
				tr.form("/console/consumers", url.Values{"name": {"ledger"}, "app": {"ledger"}, "url": {"http://127.0.0.1:9/hooks"},
					"event_types": {"stripe.invoice.*, stripe.charge.succeeded"}, "completion": {"on"}})
				all, _ := tr.store.ListConsumers(ctx, sc)
				consumers[1] = all[len(all)-1].ID
				return consumers[1]
			}, consumerState},
		{"disable a consumer",
			func() string {
				off := false
				tr.api("PATCH", "/api/v1/consumers/"+consumers[0], tr.key, api.UpdateConsumerRequest{Enabled: &off}, nil, http.StatusOK)
				return consumers[0]
			},
			func() string {
				tr.form("/console/consumers/"+consumers[1]+"/enabled", url.Values{"enabled": {"false"}})
				return consumers[1]
			}, consumerState},
		{"replay a message",
			func() string {
				msg.ConnectionID, msg.EndpointID = conns[0], eps[0]
				if err := tr.store.Ingest(ctx, msg); err != nil {
					t.Fatal(err)
				}
				tr.api("POST", "/api/v1/messages/"+msg.ID+"/replay", tr.key, nil, nil, http.StatusCreated)
				return replays()
			},
			func() string {
				tr.form("/console/messages/"+msg.ID+"/replay", url.Values{})
				return replays()
			}, messageState},
	}
	for _, a := range actions {
		var got [2]outcome
		for i, do := range []func() string{a.api, a.console} {
			id := do()
			got[i] = outcome{state: a.state(id), audit: tr.lastAudit()}
		}
		if !equalJSON(got[0].state, got[1].state) {
			t.Errorf("%s: the API left %v, the console %v", a.name, got[0].state, got[1].state)
		}
		if got[0].audit != got[1].audit {
			t.Errorf("%s: the API audited %+v, the console %+v", a.name, got[0].audit, got[1].audit)
		}
		if got[0].audit.Actor != "key:"+tr.key[:9] || got[0].audit.OrgID != tr.org {
			t.Errorf("%s: audit names %q in %s, want the org key's prefix in the org", a.name, got[0].audit.Actor, got[0].audit.OrgID)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestBadInputIsRefusedAlikeByTheAPIAndTheConsole: the checks live in the
// control plane, so a consumer pattern too long for the API is too long for
// the console, and neither saves anything.
func TestBadInputIsRefusedAlikeByTheAPIAndTheConsole(t *testing.T) {
	tr := newTransports(t)
	long := strings.Repeat("a", 201)
	var body api.ErrorBody
	tr.api("POST", "/api/v1/consumers", tr.key, api.CreateConsumerRequest{Name: "x", App: "x", URL: "http://127.0.0.1:9/",
		EventTypes: []string{long}}, &body, http.StatusBadRequest)
	status, page := tr.form("/console/consumers", url.Values{"name": {"x"}, "app": {"x"}, "url": {"http://127.0.0.1:9/"}, "event_types": {long}})
	if status != http.StatusBadRequest || !strings.Contains(page, "longer than 200 bytes") || !strings.Contains(body.Error.Message, "longer than 200 bytes") {
		t.Fatalf("console %d; api %q: want both to refuse the pattern's length", status, body.Error.Message)
	}
	if cs, _ := tr.store.ListConsumers(context.Background(), intake.Scope{}); len(cs) != 0 {
		t.Fatalf("%d consumers saved from bad input", len(cs))
	}
}

func TestAConnectionsScriptIsSetAloneAndOnlyWhereAProviderIsDescribedByOne(t *testing.T) {
	tr := newTransports(t)
	ctx := context.Background()
	who, err := tr.ctl.Authenticate(ctx, "192.0.2.1", tr.key)
	if err != nil {
		t.Fatal(err)
	}
	none, err := tr.ctl.CreateConnection(ctx, who, control.NewConnection{Provider: "none", Name: "shop", Config: []byte(`{"id_field":"id"}`)})
	if err != nil {
		t.Fatal(err)
	}
	src := `function interpret(request) { return [{type: "shop.order"}] }`
	cn, err := tr.ctl.UpdateConnection(ctx, who, none.ID, control.ConnectionUpdate{Script: &src})
	if err != nil || control.Script(cn) != src || !strings.Contains(string(cn.Config), `"id_field":"id"`) {
		t.Fatalf("after setting the script: %s %v", cn.Config, err)
	}
	empty := ""
	if cn, err = tr.ctl.UpdateConnection(ctx, who, none.ID, control.ConnectionUpdate{Script: &empty}); err != nil || control.Script(cn) != "" ||
		!strings.Contains(string(cn.Config), `"id_field":"id"`) {
		t.Fatalf("after removing the script: %s %v", cn.Config, err)
	}
	stripe, err := tr.ctl.CreateConnection(ctx, who, control.NewConnection{Provider: "stripe", Name: "pay", Secrets: []string{"whsec_x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ctl.UpdateConnection(ctx, who, stripe.ID, control.ConnectionUpdate{Script: &src}); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a script on a stripe connection: %v, want invalid", err)
	}
}

// get reads a console page, with its status.
func (tr *transports) get(path string) (int, string) {
	tr.t.Helper()
	resp, err := tr.web.Get(tr.url + path)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestABadFilterIsRefusedAlikeByTheAPIAndTheConsole: a list's filter is
// checked by the control plane, so the API and the console refuse the same
// mistake with the same status and the same words.
func TestABadFilterIsRefusedAlikeByTheAPIAndTheConsole(t *testing.T) {
	tr := newTransports(t)
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct{ api, console string }{
		{"/api/v1/messages?endpoint_id=nope", "/console/messages?endpoint=nope"},
		{"/api/v1/messages?state=lost", "/console/messages?state=lost"},
		{"/api/v1/messages?provider_event_id=" + long(501), "/console/messages?provider_event_id=" + long(501)},
		{"/api/v1/messages?cursor=zzz", "/console/messages?cursor=zzz"},
		{"/api/v1/messages?endpoint_id=nope", "/console/dead?endpoint=nope"},
		{"/api/v1/messages?cursor=zzz", "/console/dead?mcursor=zzz"},
		{"/api/v1/events?consumer_id=nope", "/console/events?consumer=nope"},
		{"/api/v1/events?state=done", "/console/events?state=done"},
		{"/api/v1/events?type=" + long(201), "/console/events?type=" + long(201)},
		{"/api/v1/events?type=" + long(201), "/console/dead?type=" + long(201)},
		{"/api/v1/events?cursor=zzz", "/console/events?cursor=zzz"},
		{"/api/v1/events?cursor=zzz", "/console/dead?ecursor=zzz"},
	} {
		var body api.ErrorBody
		tr.api("GET", c.api, tr.key, nil, &body, http.StatusBadRequest)
		status, page := tr.get(c.console)
		if status != http.StatusBadRequest || !strings.Contains(page, html.EscapeString(body.Error.Message)) {
			t.Errorf("%s: console %d without %q, the API's words", c.console, status, body.Error.Message)
		}
	}
}

// TestUnclaimedEventsAreRefusedAlikeByTheAPIAndTheConsole: unclaimed events
// span every org, so they are staff's; an org's key is refused the same way
// by both transports.
func TestUnclaimedEventsAreRefusedAlikeByTheAPIAndTheConsole(t *testing.T) {
	tr := newTransports(t)
	var body api.ErrorBody
	tr.api("GET", "/api/v1/unclaimed", tr.key, nil, &body, http.StatusForbidden)
	status, page := tr.get("/console/unclaimed")
	if status != http.StatusForbidden || !strings.Contains(page, html.EscapeString(body.Error.Message)) {
		t.Fatalf("console: %d, want %d and %q as the API answered", status, http.StatusForbidden, body.Error.Message)
	}
	tr.api("GET", "/api/v1/unclaimed", staff, nil, nil, http.StatusOK)
}
