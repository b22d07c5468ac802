package e2e

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/intakehq/intake/internal/testkit"
)

// cutProxy forwards TCP to a server until cut, and again once restored,
// on the same address: the replica's object storage going away and back.
type cutProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: ln.Addr().String(), target: target}
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

// cut refuses new connections and drops those open.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// With --replicate-sync, while the replica's object storage cannot be
// reached nothing is acknowledged: 503 with Retry-After, and /readyz says
// why. Once it is back, webhooks are acknowledged again, by themselves.
func TestReplicaUnreachableRefusesWebhooksThenRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	skipOnPostgres(t, "--replicate ships the embedded store")
	endpoint := testkit.S3Endpoint(t)
	u := testkit.S3URL(t, endpoint)
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, target.Host)
	viaProxy := strings.Replace(u, url.QueryEscape(endpoint), url.QueryEscape("http://"+proxy.addr), 1)
	if viaProxy == u {
		t.Fatalf("the replica URL %s names no endpoint to replace", u)
	}
	s := launch(t, []string{"AWS_CA_BUNDLE="}, t.TempDir(), "--replicate", viaProxy, "--replicate-sync")
	s.waitServing(t)
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "none", "name": "hooks"}, &conn)
	var ep struct{ Token string }
	s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &ep)
	post := func() *http.Response {
		t.Helper()
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Post(s.url+"/webhooks/"+ep.Token, "application/json", strings.NewReader(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("replica reachable: %d, want 200", resp.StatusCode)
	}

	proxy.cut()
	start := time.Now()
	resp := post()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("replica unreachable: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the 503 took %v, want within 10s", took)
	}
	r, err := http.Get(s.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(body), "replica unreachable") {
		t.Errorf("/readyz during the outage: %d %q, want it to say the replica is unreachable", r.StatusCode, body)
	}
	// Staff's overview in the console says so too, with the lag.
	overview := staffConsole(t, s)("/console/")
	for _, want := range []string{`id="replica"`, `id="replica-lag"`, "The store&#39;s replica is", "Its syncs fail"} {
		if !strings.Contains(overview, want) {
			t.Errorf("staff's overview during the outage lacks %q", want)
		}
	}
	if dir := os.Getenv("INTAKE_E2E_SCREENSHOTS"); dir != "" {
		tab := browserTab(t)
		signIn(t, tab, s.url, staffToken, "#replica")
		png := read(t, tab, "screenshot", chromedp.FullScreenshot(100))
		os.WriteFile(filepath.Join(dir, "overview-replica-failing.png"), png, 0o644)
	}

	proxy.restore(t)
	eventually(t, 60*time.Second, "a webhook acknowledged once the replica is back", func() bool {
		return post().StatusCode == http.StatusOK
	})
}

// staffConsole signs in to s's console with the staff token and returns
// a function that reads a console page's HTML.
func staffConsole(t *testing.T, s *server) func(path string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	req, _ := http.NewRequest("POST", s.url+"/console/login", strings.NewReader(url.Values{"token": {staffToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url) // as a browser on the console's page sends it
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("staff's sign-in to the console: %d, want 303", resp.StatusCode)
	}
	return func(path string) string {
		t.Helper()
		resp, err := c.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, b)
		}
		return string(b)
	}
}
