package tracing_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/internal/token"
	"github.com/intakehq/intake/internal/tracing"
	"github.com/intakehq/intake/router"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

const (
	githubSecret  = "gh-signing-secret-5b1e"
	bodyMarker    = "body-marker-c0ffee"
	providerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	providerSpan  = "00f067aa0ba902b7"
)

// pipeline is intake's data plane in one process: ingress over a SQLite
// store, a worker and a router stepped by hand, and a consumer.
type pipeline struct {
	store    *sqlite.Store
	ingress  http.Handler
	worker   *worker.Worker
	router   *router.Router
	token    string
	consumer intake.Consumer
	secret   string
	received chan http.Header
}

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sealer := testkit.Sealer(t)
	now := time.Now().UTC()
	p := &pipeline{store: s, token: token.New(""), received: make(chan http.Header, 4), secret: delivery.NewSecret()}
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: now}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "github", Name: "gh", CreatedAt: now}
	conn.SealedSecrets, _ = sealer.SealConnectionSecrets(conn, []string{githubSecret})
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, Provider: "github",
		TokenHash: token.Hash(p.token), Enabled: true, MaxBodyBytes: intake.DefaultMaxBodyBytes, CreatedAt: now}
	ep.SealedToken = sealer.Seal([]byte(p.token), []byte(ep.ID))
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		p.received <- r.Header.Clone()
	}))
	t.Cleanup(consumer.Close)
	p.consumer = intake.Consumer{ID: intake.NewID(), OrgID: org.ID, Name: "issues", App: "tracker",
		URL: consumer.URL + "/hooks?key=consumer-url-token", EventTypes: []string{"github.issues.*"}, Enabled: true, CreatedAt: now}
	p.consumer.SealedSecret = sealer.Seal([]byte(p.secret), []byte(p.consumer.ID))
	for _, err := range []error{
		s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("key-" + org.ID)}),
		s.CreateConnection(ctx, conn), s.CreateEndpoint(ctx, ep), s.CreateConsumer(ctx, p.consumer),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", ingress.New(ingress.Config{Store: s, Sealer: sealer, PublicURL: "https://intake.example.com"}))
	p.ingress = mux
	p.worker = worker.New(worker.Config{Store: s, Sealer: sealer, PublicURL: "https://intake.example.com"})
	p.router = router.New(router.Config{Store: s, Sealer: sealer,
		Sender: delivery.NewSender(delivery.Options{Timeout: 5 * time.Second, Policy: delivery.DefaultPolicy()})})
	return p
}

// post sends one signed GitHub delivery, with the provider's own
// traceparent when one is given.
func (p *pipeline) post(t *testing.T, traceparent string) {
	t.Helper()
	body := fmt.Appendf(nil, `{"action":"opened","delivery":"d-1","issue":{"title":%q},"repository":{"node_id":"R_1"}}`, bodyMarker)
	mac := hmac.New(sha256.New, []byte(githubSecret))
	mac.Write(body)
	req := httptest.NewRequest("POST", "/webhooks/"+p.token, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", "d-1")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	rec := httptest.NewRecorder()
	p.ingress.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("ingress answered %d %s", rec.Code, rec.Body)
	}
}

// run steps the worker and then the router once each, as the running
// loops would.
func (p *pipeline) run(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if n, err := p.worker.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("worker claimed %d: %v", n, err)
	}
	if n, err := p.router.RunOnce(ctx); err != nil || n != 2 { // the fan-out and its one call
		t.Fatalf("router handled %d: %v", n, err)
	}
}

// recordSpans starts recording spans in memory for the rest of the test.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	restore := tracing.Use(tp)
	t.Cleanup(func() { tp.Shutdown(context.Background()); restore() })
	return exp
}

func TestOneWebhookIsOneTraceFromTheProviderToTheConsumer(t *testing.T) {
	exp := recordSpans(t)
	p := newPipeline(t)
	p.post(t, "00-"+providerTrace+"-"+providerSpan+"-01")
	p.run(t)

	var got http.Header
	select {
	case got = <-p.received:
	default:
		t.Fatal("the consumer received nothing")
	}
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if _, dup := byName[s.Name]; dup {
			t.Fatalf("two %s spans for one webhook", s.Name)
		}
		byName[s.Name] = s
	}
	steps := []string{"ingress.receive", "worker.process", "router.route", "delivery.send"}
	kinds := []trace.SpanKind{trace.SpanKindServer, trace.SpanKindConsumer, trace.SpanKindConsumer, trace.SpanKindClient}
	if len(spans) != len(steps) {
		t.Fatalf("got %d spans %v, want one each of %v", len(spans), names(spans), steps)
	}
	parent := providerSpan
	for i, name := range steps {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no %s span among %v", name, names(spans))
		}
		if s.SpanKind != kinds[i] {
			t.Errorf("%s is a %s span, want %s", name, s.SpanKind, kinds[i])
		}
		if s.SpanContext.TraceID().String() != providerTrace {
			t.Errorf("%s is in trace %s, want the provider's %s", name, s.SpanContext.TraceID(), providerTrace)
		}
		if s.Parent.SpanID().String() != parent {
			t.Errorf("%s has parent %s, want %s (the step before it)", name, s.Parent.SpanID(), parent)
		}
		parent = s.SpanContext.SpanID().String()
	}
	want := "00-" + providerTrace + "-" + byName["delivery.send"].SpanContext.SpanID().String() + "-01"
	if tp := got.Get("traceparent"); tp != want {
		t.Errorf("consumer received traceparent %q, want %q (the delivery span)", tp, want)
	}

	m, _ := p.store.ListMessages(context.Background(), intake.Scope{}, intake.MessageFilter{Limit: 10})
	events, _ := p.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{Limit: 10})
	if len(m.Items) != 1 || len(events.Items) != 1 {
		t.Fatalf("stored %d messages and %d events, want 1 each", len(m.Items), len(events.Items))
	}
	wantAttr := map[string]map[string]string{
		"ingress.receive": {"intake.message.id": m.Items[0].ID, "http.route": tracing.WebhookRoute, "http.response.status_code": "200"},
		"worker.process":  {"intake.message.id": m.Items[0].ID, "intake.attempt": "1", "intake.state": "processed", "intake.outcome": "events"},
		"router.route":    {"intake.event.id": events.Items[0].ID, "intake.state": "routed"},
		"delivery.send":   {"intake.consumer.id": p.consumer.ID, "intake.outcome": "handled", "http.response.status_code": "200"},
	}
	for name, attrs := range wantAttr {
		have := attributes(byName[name])
		for k, v := range attrs {
			if have[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", name, k, have[k], v, have)
			}
		}
	}
	for _, s := range spans {
		for k, v := range attributes(s) {
			for _, secret := range []string{githubSecret, p.token, bodyMarker, p.secret, "consumer-url-token", "/hooks"} {
				if strings.Contains(v, secret) || strings.Contains(string(k), secret) {
					t.Errorf("span %s attribute %s = %q holds %q", s.Name, k, v, secret)
				}
			}
		}
	}
}

func TestAWebhookWithoutATraceparentStartsATraceOfItsOwn(t *testing.T) {
	exp := recordSpans(t)
	p := newPipeline(t)
	p.post(t, "")
	p.run(t)
	<-p.received
	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("got spans %v, want four", names(spans))
	}
	traceID := spans[0].SpanContext.TraceID()
	for _, s := range spans {
		if s.SpanContext.TraceID() != traceID {
			t.Errorf("%s is in trace %s, the others in %s", s.Name, s.SpanContext.TraceID(), traceID)
		}
		if s.Name == "ingress.receive" && s.Parent.IsValid() {
			t.Errorf("ingress.receive has parent %s without a provider traceparent", s.Parent.SpanID())
		}
	}
}

func TestTracingOffSendsNoTraceparentAndStoresNone(t *testing.T) {
	if tracing.Enabled() {
		t.Fatal("tracing is on at the start of the test")
	}
	p := newPipeline(t)
	p.post(t, "00-"+providerTrace+"-"+providerSpan+"-01")
	claims, err := p.store.ClaimMessages(context.Background(), time.Now().Add(time.Second), time.Minute, 10)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claimed %d: %v", len(claims), err)
	}
	if tp := claims[0].Message.TraceParent; tp != "" {
		t.Errorf("with tracing off the message stored traceparent %q", tp)
	}
	p.worker.Process(context.Background(), claims[0])
	if n, err := p.router.RunOnce(context.Background()); err != nil || n != 2 { // the fan-out and its one call
		t.Fatalf("router handled %d: %v", n, err)
	}
	if h := <-p.received; h.Get("traceparent") != "" {
		t.Errorf("with tracing off the consumer received traceparent %q", h.Get("traceparent"))
	}
}

func attributes(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"("+s.SpanKind.String()+")")
	}
	return out
}

func TestAProviderTraceNotSampledStaysUnsampledAtEveryStep(t *testing.T) {
	exp := recordSpans(t)
	p := newPipeline(t)
	p.post(t, "00-"+providerTrace+"-"+providerSpan+"-00")
	p.run(t)
	tp := (<-p.received).Get("traceparent")
	if !strings.HasPrefix(tp, "00-"+providerTrace+"-") || !strings.HasSuffix(tp, "-00") {
		t.Errorf("consumer received traceparent %q, want the provider's trace %s, not sampled", tp, providerTrace)
	}
	if spans := exp.GetSpans(); len(spans) != 0 {
		t.Errorf("recorded spans %v of a trace the provider did not sample", names(spans))
	}
}
