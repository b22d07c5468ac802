package console_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/provider/fixtures"
	"github.com/intakehq/intake/rules"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

const (
	staffToken   = "console-test-staff-token"
	stripeSecret = "whsec_console_test"
)

// env is ingress, a worker, the admin API and the console over one SQLite
// store, as `intake serve` wires them. The worker runs when a test posts a
// webhook, not on its own, so a test knows when processing is done.
type env struct {
	t      *testing.T
	url    string
	store  *sqlite.Store
	sealer *seal.Sealer
	worker *worker.Worker
	rules  *rules.Engine
	// bulkMax is the consoles' --bulk-max (0: the default); consoleH the
	// console the server serves.
	bulkMax  int
	consoleH http.Handler
}

// withBulkMax serves a console whose --bulk-max is n, before any browser
// signs in.
func (e *env) withBulkMax(n int) {
	e.bulkMax = n
	e.consoleH = e.console().Handler()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	sealer := testkit.Sealer(t)
	e := &env{t: t, store: st, sealer: sealer, rules: testkit.Rules(t)}
	srv := httptest.NewServer(nil)
	e.url = srv.URL
	mux := http.NewServeMux()
	// Endpoints are read afresh on every request: a test that disables one
	// sees the next request refused, with no cache to outwait.
	mux.Handle("/webhooks/{token}", ingress.New(ingress.Config{Store: st, Sealer: sealer, PublicURL: srv.URL, EndpointTTL: time.Nanosecond}))
	mux.Handle("/api/", api.New(api.Config{Control: control.New(control.Config{Store: st, Sealer: sealer, StaffToken: staffToken,
		PublicURL: srv.URL, Rules: e.rules}), Wakes: st, PublicURL: srv.URL}).Handler())
	// A test may make the console again (withBulkMax) before it signs in.
	e.consoleH = e.console().Handler()
	mux.Handle("/console/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.consoleH.ServeHTTP(w, r) }))
	srv.Config.Handler = mux
	e.worker = worker.New(worker.Config{Store: st, Sealer: sealer, PublicURL: srv.URL, Rules: e.rules})
	t.Cleanup(func() { srv.Close(); st.Close() })
	return e
}

// console is another console process of the same deployment.
func (e *env) console() *console.Console {
	return console.New(console.Config{Control: e.control(), PublicURL: e.url})
}

// control is the control plane the consoles act through.
func (e *env) control() *control.Plane {
	return control.New(control.Config{Store: e.store, Sealer: e.sealer, StaffToken: staffToken, PublicURL: e.url,
		ConsumerPolicy: delivery.DefaultPolicy(), Rules: e.rules, BulkMax: e.bulkMax})
}

// apiCall calls the admin API and decodes its answer.
func apiCall[T any](e *env, tok, method, path string, in any) T {
	e.t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(method, e.url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	var v T
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			e.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return v
}

// tenant is an org with a Stripe connection and an endpoint.
type tenant struct {
	org  api.Org
	conn api.Connection
	ep   api.Endpoint
}

func (e *env) tenant(name string) tenant {
	e.t.Helper()
	var tn tenant
	tn.org = apiCall[api.Org](e, staffToken, "POST", "/api/v1/orgs", api.CreateOrgRequest{Name: name})
	tn.conn = apiCall[api.Connection](e, tn.org.APIKey, "POST", "/api/v1/connections", api.CreateConnectionRequest{
		Provider: "stripe", Name: name + " live", Secrets: []string{stripeSecret}})
	tn.ep = apiCall[api.Endpoint](e, tn.org.APIKey, "POST", "/api/v1/endpoints", api.CreateEndpointRequest{ConnectionID: tn.conn.ID})
	return tn
}

// post sends a request to an endpoint and returns the processed message.
func (e *env) post(tn tenant, header http.Header, body []byte) intake.Message {
	e.t.Helper()
	before := e.messages(tn)
	req, _ := http.NewRequest("POST", tn.ep.URL, bytes.NewReader(body))
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		e.t.Fatalf("ingress answered %d", resp.StatusCode)
	}
	if _, err := e.worker.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	ms := e.messages(tn)
	if len(ms) <= len(before) || !settled(ms[0].State) {
		e.t.Fatalf("after one worker pass the new message is not settled: %+v", ms)
	}
	m, err := e.store.Message(context.Background(), intake.Scope{}, ms[0].ID) // with its event ids
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// send posts a signed Stripe sample of typ.
func (e *env) send(tn tenant, typ string) intake.Message {
	e.t.Helper()
	s, err := fixtures.Build("stripe", fixtures.Options{Type: typ, Secret: stripeSecret, URL: tn.ep.URL})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.post(tn, s.Header, s.Body)
}

// sendDead posts a correctly signed Stripe request that cannot be
// interpreted (no type), so it is dead at once.
func (e *env) sendDead(tn tenant) intake.Message {
	body := []byte(`{"id":"evt_broken_` + intake.NewID() + `","object":"event"}`)
	ts := fmt.Sprint(time.Now().Unix())
	m := hmac.New(sha256.New, []byte(stripeSecret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	h := http.Header{"Content-Type": {"application/json"}, "Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))}}
	return e.post(tn, h, body)
}

func (e *env) messages(tn tenant) []intake.Message {
	page, err := e.store.ListMessages(context.Background(), intake.Scope{OrgID: tn.org.ID}, intake.MessageFilter{Limit: 500})
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Items
}

func settled(s intake.MessageState) bool {
	return s == intake.MessageProcessed || s == intake.MessageIgnored || s == intake.MessageDead
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    *testing.T
	e    *env
	c    *http.Client
	base string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, e: e, base: e.url, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// page is an answer as the browser got it.
type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) get(path string) page {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

// post submits a form from a console page (Origin set as browsers do).
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func read(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{resp.StatusCode, resp.Header, string(raw)}
}

// signIn signs the browser in with tok.
func (b *browser) signIn(tok string) {
	b.t.Helper()
	p := b.post("/console/login", url.Values{"token": {tok}, "next": {"/console/"}})
	if p.status != http.StatusSeeOther {
		b.t.Fatalf("sign-in answered %d: %s", p.status, p.body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the session's CSRF token, read from a page as a form carries it.
func (b *browser) csrf() string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(b.get("/console/messages").body)
	if m == nil {
		b.t.Fatal("no CSRF token on the page")
	}
	return m[1]
}

func (b *browser) cookie() *http.Cookie {
	u, _ := url.Parse(b.base + "/console/")
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "intake_console" {
			return c
		}
	}
	return nil
}

func wantStatus(t *testing.T, p page, status int) {
	t.Helper()
	if p.status != status {
		t.Fatalf("status %d, want %d: %.400s", p.status, status, p.body)
	}
}

func TestConsoleSendsVisitorsToSignInAndBackAfter(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	p := b.get("/console/events?state=dead")
	wantStatus(t, p, http.StatusSeeOther)
	if loc := p.header.Get("Location"); loc != "/console/login?next="+url.QueryEscape("/console/events?state=dead") {
		t.Fatalf("redirected to %q", loc)
	}
	p = b.post("/console/login", url.Values{"token": {staffToken}, "next": {"/console/events?state=dead"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/events?state=dead" {
		t.Fatalf("after sign-in: %d to %q", p.status, p.header.Get("Location"))
	}
	// A destination outside the console is not followed.
	p = e.browser().post("/console/login", url.Values{"token": {staffToken}, "next": {"//evil.example/console/"}})
	if p.header.Get("Location") != "/console/" {
		t.Fatalf("sign-in sent the browser to %q", p.header.Get("Location"))
	}
}

func TestSignInWithAWrongTokenIsRefused(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	p := b.post("/console/login", url.Values{"token": {"ik_not-a-key"}})
	wantStatus(t, p, http.StatusUnauthorized)
	if !strings.Contains(p.body, "invalid token") || b.cookie() != nil {
		t.Fatalf("refusal page or cookie wrong: cookie %v", b.cookie())
	}
	wantStatus(t, b.get("/console/"), http.StatusSeeOther)
}

func TestSessionCookieIsStrictHttpOnlyAndHoldsNoToken(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	b := e.browser()
	p := b.post("/console/login", url.Values{"token": {acme.org.APIKey}})
	set := p.header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/console"} {
		if !strings.Contains(set, want) {
			t.Fatalf("Set-Cookie %q lacks %s", set, want)
		}
	}
	c := b.cookie()
	payload, _, _ := strings.Cut(c.Value, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	if strings.Contains(c.Value, acme.org.APIKey) || bytes.Contains(raw, []byte(acme.org.APIKey)) || bytes.Contains(raw, []byte(acme.org.APIKey[3:20])) {
		t.Fatal("the cookie carries the API key")
	}
	if p := b.get("/console/"); p.status != 200 || !strings.Contains(p.body, "acme") {
		t.Fatalf("overview: %d", p.status)
	}
}

func TestAnotherProcessOnTheSameStoreAcceptsTheSessionAndAForgedCookieIsRefused(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.signIn(staffToken)
	cookie := b.cookie()

	other := httptest.NewServer(e.console().Handler())
	defer other.Close()
	get := func(value string) int {
		req, _ := http.NewRequest("GET", other.URL+"/console/endpoints", nil)
		req.AddCookie(&http.Cookie{Name: "intake_console", Value: value})
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(cookie.Value); got != 200 {
		t.Fatalf("another process answered %d to the session", got)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(cookie.Value)
	raw[0] ^= 1
	for name, v := range map[string]string{"one bit changed": base64.RawURLEncoding.EncodeToString(raw), "truncated": cookie.Value[:20],
		"garbage": "x.y", "overlong": strings.Repeat(cookie.Value, 3)} {
		if got := get(v); got != http.StatusSeeOther {
			t.Errorf("%s: answered %d, want a redirect to sign in", name, got)
		}
	}
	// Another deployment (its own store) does not know the session.
	stranger := console.New(console.Config{Control: control.New(control.Config{Store: newEnv(t).store, Sealer: e.sealer,
		StaffToken: staffToken})})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/console/", nil)
	req.AddCookie(cookie)
	stranger.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("a process with another key answered %d", rec.Code)
	}
}

func TestRevokingAnAPIKeyEndsItsConsoleSessions(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	b := e.browser()
	b.signIn(acme.org.APIKey)
	wantStatus(t, b.get("/console/messages"), 200)
	keys := apiCall[api.List[api.APIKey]](e, acme.org.APIKey, "GET", "/api/v1/keys", nil)
	apiCall[api.APIKey](e, staffToken, "DELETE", "/api/v1/keys/"+keys.Items[0].ID, nil)
	wantStatus(t, b.get("/console/messages"), http.StatusSeeOther)
}

func TestSignOutEndsTheSession(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.signIn(staffToken)
	old := b.cookie()
	wantStatus(t, b.post("/console/logout", url.Values{"csrf": {b.csrf()}}), http.StatusSeeOther)
	b.c.Jar.SetCookies(&url.URL{Scheme: "http", Host: strings.TrimPrefix(e.url, "http://"), Path: "/console/"}, []*http.Cookie{old})
	wantStatus(t, b.get("/console/"), http.StatusSeeOther)
}

// A token's sign-in and sign-out are in the audit log as a person's are:
// the org's, under the key's name, with the role the key gave.
func TestATokensSignInAndSignOutAreAudited(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	b := e.browser()
	b.signIn(acme.org.APIKey)
	wantStatus(t, b.post("/console/logout", url.Values{"csrf": {b.csrf()}}), http.StatusSeeOther)
	audit, err := e.store.ListAudit(context.Background(), intake.Scope{OrgID: acme.org.ID}, intake.AuditFilter{Limit: 10})
	if err != nil || len(audit.Items) < 2 {
		t.Fatalf("acme's audit = %+v %v, want the sign-in and the sign-out", audit.Items, err)
	}
	out, in := audit.Items[0], audit.Items[1]
	actor := "key:" + acme.org.APIKey[:len("ik_")+6]
	if in.Action != "session.sign_in" || in.Actor != actor || in.TargetType != "token" || in.Detail != "role=admin" {
		t.Errorf("sign-in entry %+v, want session.sign_in by %s with its role", in, actor)
	}
	if out.Action != "session.sign_out" || out.Actor != actor || out.TargetType != "session" {
		t.Errorf("sign-out entry %+v, want session.sign_out by %s", out, actor)
	}
}

func TestFormsNeedTheSessionsCSRFTokenAndTheConsolesOrigin(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	m := e.send(acme, "invoice.paid")
	b, other := e.browser(), e.browser()
	b.signIn(acme.org.APIKey)
	other.signIn(acme.org.APIKey)
	path := "/console/messages/" + m.ID + "/replay"
	wantStatus(t, b.post(path, url.Values{}), http.StatusForbidden)
	wantStatus(t, b.post(path, url.Values{"csrf": {other.csrf()}}), http.StatusForbidden)

	req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(url.Values{"csrf": {b.csrf()}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a cross-origin form answered %d", resp.StatusCode)
	}
	if n := len(e.messages(acme)); n != 1 {
		t.Fatalf("%d messages after refused replays, want 1", n)
	}
	wantStatus(t, b.post(path, url.Values{"csrf": {b.csrf()}}), http.StatusSeeOther)
}

func TestAnotherOrgsRowsAreNotFound(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.tenant("acme"), e.tenant("globex")
	m := e.send(acme, "invoice.paid")
	b := e.browser()
	b.signIn(globex.org.APIKey)
	for _, path := range []string{"/console/messages/" + m.ID, "/console/messages/" + m.ID + "/body", "/console/events/" + m.EventIDs[0],
		"/console/messages/not-an-id", "/console/nosuchpage"} {
		if p := b.get(path); p.status != http.StatusNotFound || strings.Contains(p.body, m.ID) {
			t.Errorf("GET %s: %d", path, p.status)
		}
	}
	// Unclaimed events are staff's: refused, as the admin API refuses them.
	if p := b.get("/console/unclaimed"); p.status != http.StatusForbidden || strings.Contains(p.body, m.ID) {
		t.Errorf("GET /console/unclaimed: %d, want 403", p.status)
	}
	csrf := b.csrf()
	for _, path := range []string{"/console/messages/" + m.ID + "/replay", "/console/events/" + m.EventIDs[0] + "/reroute",
		"/console/endpoints/" + acme.ep.ID + "/enabled", "/console/connections/" + acme.conn.ID + "/disable"} {
		wantStatus(t, b.post(path, url.Values{"csrf": {csrf}, "enabled": {"false"}}), http.StatusNotFound)
	}
	if p := b.post("/console/endpoints", url.Values{"csrf": {csrf}, "connection": {acme.conn.ID}}); p.status != http.StatusNotFound {
		t.Fatalf("an endpoint on another org's connection: %d", p.status)
	}
	for _, path := range []string{"/console/messages", "/console/events", "/console/dead", "/console/endpoints", "/console/connections"} {
		if p := b.get(path); p.status != 200 || strings.Contains(p.body, m.ID) || strings.Contains(p.body, acme.ep.ID) || strings.Contains(p.body, acme.conn.ID) {
			t.Errorf("%s shows acme's rows to globex", path)
		}
	}
	ep, err := e.store.Endpoint(context.Background(), intake.Scope{}, acme.ep.ID)
	if err != nil || !ep.Enabled {
		t.Fatalf("acme's endpoint: %+v %v", ep, err)
	}
}

func TestMessagePageHidesCredentialsAndPrettyPrintsTheBody(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	s, err := fixtures.Build("stripe", fixtures.Options{Type: "invoice.paid", Secret: stripeSecret})
	if err != nil {
		t.Fatal(err)
	}
	s.Header.Set("Authorization", "Bearer leaked-bearer-value")
	s.Header.Set("X-Api-Key", "leaked-api-key-value")
	m := e.post(acme, s.Header, s.Body)
	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.get("/console/messages/" + m.ID)
	wantStatus(t, p, 200)
	if strings.Contains(p.body, "leaked-bearer-value") || strings.Contains(p.body, "leaked-api-key-value") {
		t.Fatal("the page shows a credential header")
	}
	if !strings.Contains(p.body, "2 with credentials hidden") || !strings.Contains(p.body, "Stripe-Signature") {
		t.Fatal("the page does not list the other headers or say what it hid")
	}
	if !strings.Contains(p.body, "\n  &#34;type&#34;: &#34;invoice.paid&#34;\n") || !strings.Contains(p.body, "stripe.invoice.paid") {
		t.Fatalf("body not pretty-printed, or events missing:\n%s", p.body)
	}
	raw := b.get("/console/messages/" + m.ID + "/body")
	if raw.body != string(s.Body) || !strings.Contains(raw.header.Get("Content-Security-Policy"), "sandbox") ||
		!strings.HasPrefix(raw.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("raw body download: %v", raw.header)
	}
}

func TestReplayButtonMakesANewMessageAndRecordsIt(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	m := e.send(acme, "invoice.paid")
	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.post("/console/messages/"+m.ID+"/replay", url.Values{"csrf": {b.csrf()}})
	wantStatus(t, p, http.StatusSeeOther)
	loc := p.header.Get("Location")
	id := strings.TrimSuffix(strings.TrimPrefix(loc, "/console/messages/"), "?flash=replayed")
	replay, err := e.store.Message(context.Background(), intake.Scope{OrgID: acme.org.ID}, id)
	if err != nil || replay.ReplayOf != m.ID {
		t.Fatalf("replay %q: %+v %v", loc, replay, err)
	}
	page := b.get(loc)
	if !strings.Contains(page.body, "Replayed: this is the new message.") || !strings.Contains(page.body, `href="/console/messages/`+m.ID+`"`) {
		t.Fatal("the new message's page does not say it is a replay of the original")
	}
	audit, err := e.store.ListAudit(context.Background(), intake.Scope{OrgID: acme.org.ID}, intake.AuditFilter{Limit: 10})
	if err != nil || len(audit.Items) == 0 || audit.Items[0].Action != "message.replay" || audit.Items[0].Actor != "key:"+acme.org.APIKey[:9] {
		t.Fatalf("audit: %+v %v", audit.Items, err)
	}
}

func TestEveryPageRendersForStaffAndForAnOrg(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	m := e.send(acme, "invoice.paid")
	e.sendDead(acme)
	pages := []string{"/console/", "/console/messages", "/console/messages?state=processed&endpoint=" + acme.ep.ID + "&since=2020-01-01T00:00",
		"/console/messages/" + m.ID, "/console/events", "/console/events?type=stripe.invoice.paid", "/console/events/" + m.EventIDs[0],
		"/console/dead", "/console/endpoints", "/console/connections", "/console/consumers"}
	for tok, extra := range map[string][]string{staffToken: {"/console/unclaimed"}, acme.org.APIKey: nil} {
		b := e.browser()
		b.signIn(tok)
		for _, path := range append(pages, extra...) {
			p := b.get(path)
			if p.status != 200 || !strings.Contains(p.body, "</html>") {
				t.Errorf("%s: %d %.300s", path, p.status, p.body)
			}
			if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("%s: CSP %q", path, csp)
			}
		}
	}
	b := e.browser()
	b.signIn(acme.org.APIKey)
	if p := b.get("/console/"); !strings.Contains(p.body, "1 message received in the last 24 h is dead") {
		t.Fatalf("the overview raises no alarm for the dead message:\n%s", p.body)
	}
	if p := b.get("/console/messages?state=bogus"); p.status != http.StatusBadRequest {
		t.Fatalf("a bad filter: %d", p.status)
	}
}

func TestEndpointURLIsShownOnceAndConnectionSecretsNever(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	b := e.browser()
	b.signIn(acme.org.APIKey)
	csrf := b.csrf()
	p := b.post("/console/connections", url.Values{"csrf": {csrf}, "provider": {"github"}, "name": {"octo"}, "secrets": {"gh-secret-one\ngh-secret-two\n"}})
	wantStatus(t, p, http.StatusSeeOther)
	conns, _ := e.store.ListConnections(context.Background(), intake.Scope{OrgID: acme.org.ID})
	if len(conns) != 2 || conns[1].Provider != "github" {
		t.Fatalf("connections %+v", conns)
	}
	list := b.get("/console/connections")
	if strings.Contains(list.body, "gh-secret") || strings.Contains(list.body, stripeSecret) || !strings.Contains(list.body, "2 active") {
		t.Fatal("the connections page shows a secret, or not how many")
	}

	p = b.post("/console/endpoints", url.Values{"csrf": {csrf}, "connection": {conns[1].ID}, "rate_per_sec": {"0"}})
	wantStatus(t, p, 200)
	u := regexp.MustCompile(`id="endpoint-url">([^<]+)<`).FindStringSubmatch(p.body)
	if u == nil || !strings.HasPrefix(u[1], e.url+"/webhooks/") {
		t.Fatalf("no endpoint URL on the page")
	}
	tok := strings.TrimPrefix(u[1], e.url+"/webhooks/")
	if strings.Contains(b.get("/console/endpoints").body, tok) {
		t.Fatal("the endpoint URL is shown again")
	}
	s, _ := fixtures.Build("github", fixtures.Options{Secret: "gh-secret-two"})
	resp, err := http.Post(u[1], "application/json", bytes.NewReader(s.Body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the new endpoint answered %d", resp.StatusCode)
	}

	wantStatus(t, b.post("/console/connections/"+conns[1].ID+"/disable", url.Values{"csrf": {csrf}}), http.StatusSeeOther)
	resp, err = http.Post(u[1], "application/json", bytes.NewReader(s.Body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after disabling the connection its endpoint still answers %d", resp.StatusCode)
	}
	bad := b.post("/console/connections", url.Values{"csrf": {csrf}, "provider": {"stripe"}, "name": {"no secret"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "needs at least one signing secret") {
		t.Fatalf("a connection without a secret: %d", bad.status)
	}
}

func TestConsumerSecretIsShownOnceAndConsumersCanBeDisabled(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	b := e.browser()
	b.signIn(staffToken)
	csrf := b.csrf()
	p := b.post("/console/consumers", url.Values{"csrf": {csrf}, "org": {acme.org.ID}, "name": {"billing"}, "app": {"billing-svc"},
		"url": {"http://127.0.0.1:9/hooks"}, "event_types": {"stripe.invoice.*, stripe.charge.succeeded"}})
	wantStatus(t, p, 200)
	secret := regexp.MustCompile(`id="signing-secret">(whsec_[^<]+)<`).FindStringSubmatch(p.body)
	if secret == nil {
		t.Fatal("no signing secret on the page")
	}
	if strings.Contains(b.get("/console/consumers").body, secret[1]) {
		t.Fatal("the signing secret is shown again")
	}
	cs, _ := e.store.ListConsumers(context.Background(), intake.Scope{OrgID: acme.org.ID})
	if len(cs) != 1 || len(cs[0].EventTypes) != 2 || !cs[0].Enabled {
		t.Fatalf("consumers %+v", cs)
	}
	wantStatus(t, b.post("/console/consumers/"+cs[0].ID+"/enabled", url.Values{"csrf": {csrf}, "enabled": {"false"}}), http.StatusSeeOther)
	if c, _ := e.store.Consumer(context.Background(), intake.Scope{}, cs[0].ID); c.Enabled {
		t.Fatal("the consumer is still enabled")
	}
	bad := b.post("/console/consumers", url.Values{"csrf": {csrf}, "org": {acme.org.ID}, "name": {"x"}, "app": {"x"},
		"url": {"http://169.254.169.254/latest"}, "event_types": {"*"}})
	if bad.status != http.StatusBadRequest {
		t.Fatalf("a metadata-address consumer: %d", bad.status)
	}
}

func TestDeadLettersReplayAndRerouteInBulk(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	d1, d2 := e.sendDead(acme), e.sendDead(acme)
	ok := e.send(acme, "invoice.paid")
	deadEvent(t, e, ok.EventIDs[0])

	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.get("/console/dead")
	if !strings.Contains(p.body, d1.ID) || !strings.Contains(p.body, d2.ID) || !strings.Contains(p.body, ok.EventIDs[0]) || strings.Contains(p.body, ok.ID) {
		t.Fatal("the dead letters page does not list exactly the dead message and events")
	}
	csrf := b.csrf()
	p = b.post("/console/dead/replay", url.Values{"csrf": {csrf}})
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || !strings.Contains(loc, "flash=replayed-dead") || !strings.Contains(loc, "n=2") {
		t.Fatalf("bulk replay: %d %q", p.status, loc)
	}
	replays := 0
	for _, m := range e.messages(acme) {
		if m.ReplayOf == d1.ID || m.ReplayOf == d2.ID {
			replays++
		}
	}
	if replays != 2 {
		t.Fatalf("%d replays of the dead messages, want 2", replays)
	}
	p = b.post("/console/dead/reroute", url.Values{"csrf": {csrf}, "type": {"stripe.invoice.paid"}})
	if loc := p.header.Get("Location"); !strings.Contains(loc, "n=1") {
		t.Fatalf("bulk re-route: %q", loc)
	}
	ev, _ := e.store.Event(context.Background(), intake.Scope{}, ok.EventIDs[0])
	if ev.State != intake.EventPending {
		t.Fatalf("re-routed event is %s", ev.State)
	}
	if !strings.Contains(b.get(p.header.Get("Location")).body, "Re-routed 1 dead events.") {
		t.Fatal("no notice after the re-route")
	}
}

// TestDeadLettersNameTheConsumerAndItsLastError: a dead event lists the
// consumer whose attempts it spent, by name and linked, with its last
// error; the overview's alarm says what happened, in the singular for one.
func TestDeadLettersNameTheConsumerAndItsLastError(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	m := e.send(acme, "invoice.paid")
	deadEvent(t, e, m.EventIDs[0])
	cs, err := e.store.ListConsumers(context.Background(), intake.Scope{OrgID: acme.org.ID})
	if err != nil || len(cs) != 1 {
		t.Fatalf("consumers %+v %v", cs, err)
	}

	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.get("/console/dead")
	for _, want := range []string{`<a href="/console/consumers/` + cs[0].ID + `">failing</a>`, "answered 503", "1 of 1"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the dead letters page lacks %q:\n%s", want, p.body)
		}
	}
	p = b.get("/console/")
	if !strings.Contains(p.body, "Consumer failing: consumer answered 5xx: 1 failure over 1 event") {
		t.Fatalf("the overview's alarm for the dead event:\n%s", p.body)
	}
	p = b.get("/console/events/" + m.EventIDs[0])
	if !strings.Contains(p.body, `<span class="state state-dead">dead</span>`) || !strings.Contains(p.body, "1 of 1") {
		t.Fatalf("the dead event's page does not show its dead call:\n%s", p.body)
	}
}

// TestEventPageCountsAttemptsOfEachConsumersOwnLimit: an event's page
// reads "n of m" with m the consumer's own retry limit when the call was
// made, not the server's nor a later one, names the consumer, and shows
// what the consumer answered.
func TestEventPageCountsAttemptsOfEachConsumersOwnLimit(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	m := e.send(acme, "invoice.paid")
	ctx := context.Background()
	c := intake.Consumer{ID: intake.NewID(), OrgID: acme.org.ID, Name: "ledger", App: "billing", URL: "http://127.0.0.1:9/",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte{1}, CreatedAt: time.Now(),
		Controls: intake.Controls{Retry: intake.RetryPolicy{Attempts: 3}}}
	if err := e.store.CreateConsumer(ctx, c); err != nil {
		t.Fatal(err)
	}
	testkit.Route(t, e.store, time.Now(), m.EventIDs[0], intake.EventRetrying,
		intake.Delivery{ConsumerID: c.ID, Outcome: intake.DeliveryRetry, StatusCode: 503, Error: "answered 503",
			Response: &intake.DeliveryResponse{Status: 503, Headers: map[string]string{"content-type": "text/html", "retry-after": "30"},
				Body: `<script>alert("boom")</script>`, BodyEncoding: "text", BodyTruncated: true}})
	// Raising the consumer's retry afterwards rewrites nothing shown.
	c.Controls.Retry.Attempts, c.Version = 6, 1
	if err := e.store.UpdateConsumer(ctx, intake.Scope{}, c); err != nil {
		t.Fatal(err)
	}

	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.get("/console/events/" + m.EventIDs[0])
	wantStatus(t, p, 200)
	for _, want := range []string{`<td class="num">1 of 3</td>`, `<a href="/console/consumers/` + c.ID + `">ledger</a>`, "answered 503",
		// The answer, collapsed, its body escaped in a block that scrolls.
		`<details class="answer">`, "The answer: <b>503</b>", "text/html", "retry-after: <span class=\"mono\">30</span>",
		`<pre class="code answer-body">&lt;script&gt;alert(&#34;boom&#34;)&lt;/script&gt;</pre>`, "its first 4 KiB are kept"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the event page lacks %q:\n%s", want, p.body)
		}
	}
	if strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, c.ID+"</") {
		t.Errorf("the event page counts toward the server's limit or shows the consumer's id:\n%s", p.body)
	}
}

// deadEvent routes an event to death as a router whose one consumer fails
// its only attempt would.
func deadEvent(t *testing.T, e *env, id string) {
	t.Helper()
	ctx := context.Background()
	ev, err := e.store.Event(ctx, intake.Scope{}, id)
	if err != nil {
		t.Fatal(err)
	}
	c := intake.Consumer{ID: intake.NewID(), OrgID: ev.OrgID, Name: "failing", App: "failing", URL: "http://127.0.0.1:9/",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte{1}, CreatedAt: time.Now(),
		Controls: intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}}}
	if err := e.store.CreateConsumer(ctx, c); err != nil {
		t.Fatal(err)
	}
	testkit.Route(t, e.store, time.Now(), id, intake.EventDead,
		intake.Delivery{ConsumerID: c.ID, Outcome: intake.DeliveryRetry, StatusCode: 503, Error: "answered 503"})
}

func TestMessagesFilterByProviderEventAndEventsByConsumer(t *testing.T) {
	e := newEnv(t)
	tn := e.tenant("acme")
	a := e.send(tn, "invoice.paid")
	e.send(tn, "invoice.created")
	b := e.browser()
	b.signIn(tn.org.APIKey)
	p := b.get("/console/messages?provider_event_id=" + a.ProviderEventID)
	wantStatus(t, p, 200)
	if !strings.Contains(p.body, a.ID) || strings.Count(p.body, `class="row-link"`) != 1 {
		t.Fatalf("filtered messages page:\n%s", p.body)
	}
	if p = b.get("/console/messages/" + a.ID); !strings.Contains(p.body, `id="attempts"`) || !strings.Contains(p.body, "processed") {
		t.Fatalf("message page without its attempts:\n%s", p.body)
	}
	if p = b.get("/console/events"); strings.Count(p.body, `class="row-link"`) != 2 {
		t.Fatalf("unfiltered events page:\n%s", p.body)
	}
	p = b.get("/console/events?consumer=" + intake.NewID())
	wantStatus(t, p, 200)
	if strings.Contains(p.body, `class="row-link"`) {
		t.Fatal("events of a consumer that got none are listed")
	}
}

func TestAsanaHandshakeSecretIsAdoptedFromItsMessagePageUnseen(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	conn := apiCall[api.Connection](e, acme.org.APIKey, "POST", "/api/v1/connections", api.CreateConnectionRequest{Provider: "asana", Name: "tasks"})
	ep := apiCall[api.Endpoint](e, acme.org.APIKey, "POST", "/api/v1/endpoints", api.CreateEndpointRequest{ConnectionID: conn.ID})
	const secret = "asana-handshake-secret-6b1e"
	m := e.post(tenant{org: acme.org, conn: conn, ep: ep}, http.Header{"X-Hook-Secret": {secret}}, nil)
	b := e.browser()
	b.signIn(acme.org.APIKey)

	page := b.get("/console/messages/" + m.ID)
	if !strings.Contains(page.body, `id="adopt-secret"`) || strings.Contains(page.body, secret) {
		t.Fatalf("handshake page: adopt button %v, secret shown %v", strings.Contains(page.body, `id="adopt-secret"`), strings.Contains(page.body, secret))
	}
	if other := b.get("/console/messages/" + e.send(acme, "invoice.paid").ID); strings.Contains(other.body, `id="adopt-secret"`) {
		t.Fatal("a Stripe message offers to adopt a handshake secret")
	}
	for _, flash := range []string{"secret-adopted", "secret-known"} {
		p := b.post("/console/messages/"+m.ID+"/adopt-secret", url.Values{"csrf": {b.csrf()}})
		wantStatus(t, p, http.StatusSeeOther)
		if loc := p.header.Get("Location"); !strings.HasSuffix(loc, "?flash="+flash) {
			t.Fatalf("adopting: redirected to %q, want flash %s", loc, flash)
		}
	}
	stored, err := e.store.Connection(context.Background(), intake.Scope{}, conn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if opened, err := e.sealer.OpenSecrets(stored.SealedSecrets, []byte(conn.ID)); err != nil || len(opened) != 1 || string(opened[0]) != secret {
		t.Fatalf("the connection's secrets open to %q, %v", opened, err)
	}
	audit, err := e.store.ListAudit(context.Background(), intake.Scope{OrgID: acme.org.ID}, intake.AuditFilter{Limit: 10})
	if err != nil || len(audit.Items) == 0 || audit.Items[0].Action != "connection.secrets.adopt" || audit.Items[0].TargetID != conn.ID {
		t.Fatalf("audit: %+v %v", audit.Items, err)
	}
}

// TestConnectionsPageShowsConfigAsSettingsAScriptAsCodeAndNoCredential:
// a connection's config reads as settings, its script as code (not an
// escaped JSON string), and Meta's verify token never.
func TestConnectionsPageShowsConfigAsSettingsAScriptAsCodeAndNoCredential(t *testing.T) {
	const verify = "meta-verify-0123456789"
	e := newEnv(t)
	org := apiCall[api.Org](e, staffToken, "POST", "/api/v1/orgs", api.CreateOrgRequest{Name: "acme"})
	script := "function interpret(request) {\n  return [{id: request.json.id, type: \"inventory.changed\", data: request.json}];\n}"
	cfg, _ := json.Marshal(map[string]any{"header": "X-Inventory-Signature", "script": script})
	apiCall[api.Connection](e, org.APIKey, "POST", "/api/v1/connections", api.CreateConnectionRequest{
		Provider: "hmac", Name: "inventory", Secrets: []string{"inv-secret"}, Config: cfg})
	apiCall[api.Connection](e, org.APIKey, "POST", "/api/v1/connections", api.CreateConnectionRequest{
		Provider: "meta", Name: "pages", Secrets: []string{"app-secret"}, Config: json.RawMessage(`{"verify_token":"` + verify + `"}`)})
	b := e.browser()
	b.signIn(org.APIKey)
	p := b.get("/console/connections")
	wantStatus(t, p, 200)
	for _, want := range []string{"<dt>header</dt><dd><code>X-Inventory-Signature</code></dd>",
		`<dt>script</dt><dd><pre class="code">function interpret(request) {` + "\n" + `  return [{id: request.json.id, type: &#34;inventory.changed&#34;, data: request.json}];` + "\n}</pre>",
		"<dt>verify_token</dt><dd><span class=\"muted\">set (never shown)</span>"} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("the connections page lacks %q:\n%s", want, p.body)
		}
	}
	if strings.Contains(p.body, verify) || strings.Contains(p.body, `\n`) || strings.Contains(p.body, `{&#34;`) {
		t.Fatal("the connections page shows the verify token, or config as raw JSON")
	}
}
