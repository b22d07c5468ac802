package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/console"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/internal/token"
	"github.com/intakehq/intake/store/postgres"
	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/store/sqlite"
)

// process is one console process of a deployment, on its own server.
type process struct {
	t   *testing.T
	url string
}

func startProcess(t *testing.T, st intake.Store, clock intake.Clock) *process {
	t.Helper()
	srv := httptest.NewServer(console.New(console.Config{Control: control.New(control.Config{Store: st, StaffToken: staffToken, Clock: clock}),
		Clock: clock}).Handler())
	t.Cleanup(srv.Close)
	return &process{t: t, url: srv.URL}
}

// visitor is a browser that keeps no cookies of its own: the test hands it
// the session cookie, as a load balancer would hand the request to any
// process.
type visitor struct {
	t      *testing.T
	cookie string
}

func (v *visitor) do(p *process, method, path string, form url.Values) *http.Response {
	v.t.Helper()
	req, _ := http.NewRequest(method, p.url+path, strings.NewReader(form.Encode()))
	if method == "POST" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", p.url)
	}
	if v.cookie != "" {
		req.AddCookie(&http.Cookie{Name: "intake_console", Value: v.cookie})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (v *visitor) signIn(p *process, tok string) {
	v.t.Helper()
	resp := v.do(p, "POST", "/console/login", url.Values{"token": {tok}})
	for _, c := range resp.Cookies() {
		if c.Name == "intake_console" && c.Value != "" {
			v.cookie = c.Value
			return
		}
	}
	v.t.Fatalf("sign-in on %s answered %d without a session", p.url, resp.StatusCode)
}

// status is what p answers to a page of the signed-in console.
func (v *visitor) status(p *process) int {
	v.t.Helper()
	return v.do(p, "GET", "/console/endpoints", nil).StatusCode
}

// csrf reads the session's CSRF token from a page p serves.
func (v *visitor) csrf(p *process) string {
	v.t.Helper()
	req, _ := http.NewRequest("GET", p.url+"/console/messages", nil)
	req.AddCookie(&http.Cookie{Name: "intake_console", Value: v.cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	page := read(v.t, resp)
	m := csrfField.FindStringSubmatch(page.body)
	if m == nil {
		v.t.Fatalf("no CSRF token on %s's page (%d)", p.url, page.status)
	}
	return m[1]
}

func TestSessionsWorkAcrossProcessesOnOnePostgreSQLAndSignOutEndsThemEverywhere(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Database(t)
	var stores []*postgres.Store
	for range 2 {
		st, err := postgres.Open(ctx, postgres.Options{URL: db, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores = append(stores, st)
	}
	a, b := startProcess(t, stores[0], nil), startProcess(t, stores[1], nil)

	staff := &visitor{t: t}
	staff.signIn(a, staffToken)
	if got := staff.status(b); got != http.StatusOK {
		t.Fatalf("process B answered %d to a session signed in on A", got)
	}
	if resp := staff.do(b, "POST", "/console/logout", url.Values{"csrf": {staff.csrf(b)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out on B answered %d", resp.StatusCode)
	}
	for name, p := range map[string]*process{"A": a, "B": b} {
		if got := staff.status(p); got != http.StatusSeeOther {
			t.Errorf("after sign-out on B, process %s answered %d, want a redirect to sign in", name, got)
		}
	}

	// An org's session ends on every process when its key is revoked.
	const key = "ik_console_test_org_key"
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: time.Now()}
	keyID := intake.NewID()
	if err := stores[0].CreateOrg(ctx, org, intake.APIKey{ID: keyID, Prefix: key[:10], Hash: token.Hash(key), CreatedAt: org.CreatedAt}); err != nil {
		t.Fatal(err)
	}
	acme := &visitor{t: t}
	acme.signIn(b, key)
	if got := acme.status(a); got != http.StatusOK {
		t.Fatalf("process A answered %d to an org session signed in on B", got)
	}
	if err := stores[1].RevokeAPIKey(ctx, intake.Scope{OrgID: org.ID}, keyID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := acme.status(a); got != http.StatusSeeOther {
		t.Fatalf("after its key was revoked through B, process A answered %d", got)
	}
}

func TestSessionSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intake.db")
	st, err := sqlite.Open(ctx, sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	v := &visitor{t: t}
	v.signIn(startProcess(t, st, nil), staffToken)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = sqlite.Open(ctx, sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := v.status(startProcess(t, st, nil)); got != http.StatusOK {
		t.Fatalf("after a restart the session answered %d", got)
	}
}

func TestSessionEndsWhenItExpires(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := testkit.NewClock(time.Now())
	p := startProcess(t, st, clock)
	v := &visitor{t: t}
	v.signIn(p, staffToken)
	clock.Advance(12*time.Hour - time.Second)
	if got := v.status(p); got != http.StatusOK {
		t.Fatalf("a second before its expiry the session answered %d", got)
	}
	clock.Advance(time.Second)
	if got := v.status(p); got != http.StatusSeeOther {
		t.Fatalf("at its expiry the session answered %d", got)
	}
}

func TestSignInIsRateLimitedPerClient(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := testkit.NewClock(time.Now())
	p := startProcess(t, st, clock)
	v := &visitor{t: t}
	for i := range 10 {
		if resp := v.do(p, "POST", "/console/login", url.Values{"token": {"ik_guess"}}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d answered %d", i+1, resp.StatusCode)
		}
	}
	// The budget is spent: even the right token waits.
	resp := v.do(p, "POST", "/console/login", url.Values{"token": {staffToken}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || len(resp.Cookies()) != 0 {
		t.Fatalf("the eleventh try answered %d (Retry-After %q, cookies %v)", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Cookies())
	}
	clock.Advance(6 * time.Second) // one try a sixth of a minute
	v.signIn(p, staffToken)
	if got := v.status(p); got != http.StatusOK {
		t.Fatalf("signed in after waiting, the console answered %d", got)
	}
}
