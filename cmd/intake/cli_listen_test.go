package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

// stack is ingress, workers and the admin API over one SQLite store, as
// `intake serve` wires them, in this process.
type stack struct {
	url   string
	store *sqlite.Store
}

func newStack(t *testing.T) stack {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	sealer := testkit.Sealer(t)
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", ingress.New(ingress.Config{Store: st, Sealer: sealer, PublicURL: srv.URL}))
	mux.Handle("/api/", api.New(api.Config{Control: control.New(control.Config{Store: st, Sealer: sealer, StaffToken: staffToken,
		PublicURL: srv.URL}), Wakes: st, PublicURL: srv.URL}).Handler())
	srv.Config.Handler = mux
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		worker.New(worker.Config{Store: st, Sealer: sealer, PublicURL: srv.URL, Poll: 20 * time.Millisecond}).Run(ctx)
	}()
	t.Cleanup(func() { stop(); <-done; srv.Close(); st.Close() })
	return stack{url: srv.URL, store: st}
}

// proxy sits between listen and the server so a test can cut the stream
// and keep it down for a while.
type proxy struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // pass each event through at once
	p := &proxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close) // registered before listen starts, so it runs after listen stops
	return p
}

// cut drops every open connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.down.Store(true)
	p.srv.CloseClientConnections()
}

func (p *proxy) restore() { p.down.Store(false) }

// syncBuffer is a buffer a running command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startListen runs `intake listen` until the test ends.
func startListen(t *testing.T, serverURL, tok string, args ...string) (stdout, stderr *syncBuffer) {
	t.Helper()
	var cli CLI
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	cli.Client.out, cli.Client.errOut = stdout, stderr
	parser, err := kong.New(&cli, kong.Name("intake"), kong.Exit(func(code int) { t.Errorf("intake listen exited %d", code) }))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse(append([]string{"--server", serverURL, "--token", tok, "listen", "--retry", "20ms"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cli.Client.Listen.ctx = ctx
	done := make(chan error, 1)
	go func() { done <- kctx.Run(&cli.Client) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listen: %v", err)
		}
	})
	return stdout, stderr
}

// forwardedRequest is an event as the local app received it.
type forwardedRequest struct {
	header http.Header
	body   []byte
}

func localApp(t *testing.T) (*httptest.Server, <-chan forwardedRequest) {
	t.Helper()
	got := make(chan forwardedRequest, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- forwardedRequest{r.Header.Clone(), b}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// receive waits for the local app's next request and checks it is signed
// as a consumer delivery of an event of typ.
func receive(t *testing.T, got <-chan forwardedRequest, secret, typ string) intake.Envelope {
	t.Helper()
	var r forwardedRequest
	select {
	case r = <-got:
	case <-time.After(15 * time.Second): // a hang guard
		t.Fatalf("the local app never got the %s event", typ)
	}
	var env intake.Envelope
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("forwarded body is not an envelope: %v: %s", err, r.body)
	}
	var ts int64
	if err := json.Unmarshal([]byte(r.header.Get("webhook-timestamp")), &ts); err != nil {
		t.Fatalf("webhook-timestamp %q", r.header.Get("webhook-timestamp"))
	}
	want, err := delivery.Sign(secret, env.ID, ts, r.body)
	if err != nil || r.header.Get("webhook-signature") != want || r.header.Get("webhook-id") != env.ID {
		t.Fatalf("forwarded signature %q id %q, want %q for %s", r.header.Get("webhook-signature"), r.header.Get("webhook-id"), want, env.ID)
	}
	if env.Type != typ {
		t.Fatalf("forwarded %s, want %s", env.Type, typ)
	}
	return env
}

func TestListenForwardsEventsRoutedWhileItRunsAndWhileItWasDisconnected(t *testing.T) {
	s := newStack(t)
	setup := server{url: s.url}
	org := decodeOut[api.Org](t, setup.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, setup.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "stripe",
		"--name", "test mode", "--secret", "whsec_stripe_test"))
	ep := decodeOut[api.Endpoint](t, setup.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	other := decodeOut[api.Endpoint](t, setup.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))

	app, got := localApp(t)
	px := newProxy(t, s.url)
	const secret = "whsec_bGlzdGVuLXRlc3Qtc2VjcmV0LWtleQ=="
	stdout, stderr := startListen(t, px.srv.URL, org.APIKey, "--endpoint", ep.ID, "--forward-to", app.URL+"/hooks", "--secret", secret)
	testkit.WaitFor(t, "listen is ready", func() bool { return strings.Contains(stderr.String(), "ready") })

	// An event routed while listen runs; one at another endpoint is not
	// forwarded.
	setup.mustRun(t, "", "send", "--endpoint-url", other.URL, "--provider", "stripe", "--type", "customer.created", "--secret", "whsec_stripe_test")
	setup.mustRun(t, "", "send", "--endpoint-url", ep.URL, "--provider", "stripe", "--type", "invoice.paid", "--secret", "whsec_stripe_test")
	first := receive(t, got, secret, "stripe.invoice.paid")
	testkit.WaitFor(t, "listen prints the forward", func() bool { return strings.Contains(stdout.String(), first.ID+" → 200") })

	// One routed while listen is cut off from the server.
	px.cut()
	testkit.WaitFor(t, "listen notices", func() bool { return strings.Contains(stderr.String(), "reconnecting") })
	setup.mustRun(t, "", "send", "--endpoint-url", ep.URL, "--provider", "stripe", "--type", "invoice.voided", "--secret", "whsec_stripe_test")
	testkit.WaitFor(t, "the second event is routed", func() bool {
		page, err := s.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{Type: "stripe.invoice.voided"})
		return err == nil && len(page.Items) == 1
	})
	px.restore()
	second := receive(t, got, secret, "stripe.invoice.voided")
	if !strings.Contains(stderr.String(), "resuming after "+first.ID) {
		t.Fatalf("listen did not resume after the last event:\n%s", stderr)
	}
	if second.ID == first.ID {
		t.Fatal("the same event twice")
	}
	select {
	case r := <-got:
		t.Fatalf("forwarded more than the two events: %s", r.body)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestListenJSONPrintsOneObjectPerEventAndMakesASecretWhenNoneIsGiven(t *testing.T) {
	s := newStack(t)
	setup := server{url: s.url}
	org := decodeOut[api.Org](t, setup.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, setup.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "github",
		"--name", "gh", "--secret", "gh-secret"))
	ep := decodeOut[api.Endpoint](t, setup.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	app, got := localApp(t)
	stdout, stderr := startListen(t, s.url, org.APIKey, "--forward-to", app.URL, "--json")
	testkit.WaitFor(t, "listen is ready", func() bool { return strings.Contains(stderr.String(), "ready") })
	var secret string
	for _, f := range strings.Fields(stderr.String()) {
		if strings.HasPrefix(f, "whsec_") {
			secret = f
		}
	}
	if secret == "" {
		t.Fatalf("no signing secret printed:\n%s", stderr)
	}
	setup.mustRun(t, "", "send", "--endpoint-url", ep.URL, "--provider", "github", "--secret", "gh-secret")
	env := receive(t, got, secret, "github.pull_request.opened")
	testkit.WaitFor(t, "a JSON line", func() bool { return strings.Contains(stdout.String(), "\n") })
	line := decodeOut[forwarded](t, strings.TrimSpace(stdout.String()))
	if line.ID != env.ID || line.Type != env.Type || line.Status != 200 {
		t.Fatalf("printed %+v for %s", line, env.ID)
	}
}

func TestListenStopsOnARefusedToken(t *testing.T) {
	s := newStack(t)
	var cli CLI
	var errOut bytes.Buffer
	cli.Client.out, cli.Client.errOut = io.Discard, &errOut
	parser, _ := kong.New(&cli, kong.Name("intake"))
	kctx, err := parser.Parse([]string{"--server", s.url, "--token", "ik_wrong", "listen", "--forward-to", "http://localhost:1/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	if err := kctx.Run(&cli.Client); err == nil || !strings.Contains(err.Error(), "invalid token") {
		t.Fatalf("err = %v, want the server's refusal", err)
	}
}
