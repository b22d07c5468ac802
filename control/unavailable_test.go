package control_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/console"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestUnreachablePostgresIsA503WithRetryAfterOnTheAPIAndTheConsole cuts
// the store off from PostgreSQL (a proxy between them closes every
// connection and refuses new ones): reads, writes and console pages answer
// 503 unavailable with Retry-After, never 500, and work again once the
// server is back.
func TestUnreachablePostgresIsA503WithRetryAfterOnTheAPIAndTheConsole(t *testing.T) {
	u, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testkit.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	st := testkit.PostgresAt(t, u.String())

	sealer := testkit.Sealer(t)
	srv := httptest.NewServer(nil)
	defer srv.Close()
	ctl := control.New(control.Config{Store: st, Sealer: sealer, StaffToken: staff, PublicURL: srv.URL})
	mux := http.NewServeMux()
	mux.Handle("/api/", api.New(api.Config{Control: ctl, Wakes: st, PublicURL: srv.URL}).Handler())
	mux.Handle("/console/", console.New(console.Config{Control: ctl, PublicURL: srv.URL}).Handler())
	srv.Config.Handler = mux

	call := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+staff)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, string(raw)
	}
	if resp, body := call("POST", "/api/v1/orgs", `{"name":"acme"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create org while reachable: %d %s", resp.StatusCode, body)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	login, _ := http.NewRequest("POST", srv.URL+"/console/login", strings.NewReader(url.Values{"token": {staff}}.Encode()))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	login.Header.Set("Origin", srv.URL)
	if resp, err := browser.Do(login); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console sign-in: %v %v", resp, err)
	}

	proxy.Cut()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/orgs", ""},
		{"POST", "/api/v1/orgs", `{"name":"globex"}`},
		{"GET", "/api/v1/messages", ""},
	} {
		resp, body := call(c.method, c.path, c.body)
		var e api.ErrorBody
		json.Unmarshal([]byte(body), &e)
		if resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with PostgreSQL gone: %d %s (Retry-After %q), want 503 unavailable with Retry-After",
				c.method, c.path, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	resp, err := browser.Get(srv.URL + "/console/consumers")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("console page with PostgreSQL gone: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	proxy.Restore(t)
	if resp, body := call("GET", "/api/v1/orgs", ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, "acme") {
		t.Fatalf("after PostgreSQL is back: %d %s", resp.StatusCode, body)
	}
}
