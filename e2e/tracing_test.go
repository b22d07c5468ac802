package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/tracing/otlptest"
)

// TestServeExportsOneTracePerWebhookToTheOTLPEndpoint runs the real binary
// with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP receiver.
// The batch delay is longer than the test, so the spans arrive only when
// SIGTERM flushes them: one trace per webhook, continuing the provider's
// traceparent, the consumer's traceparent in it, and no token, secret or
// body in any span.
func TestServeExportsOneTracePerWebhookToTheOTLPEndpoint(t *testing.T) {
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	rcv := otlptest.New(t)
	received := make(chan string, 4)
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		received <- r.Header.Get("traceparent")
	}))
	defer consumer.Close()

	s := launch(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_SERVICE_NAME=intake-e2e",
		"OTEL_BSP_SCHEDULE_DELAY=600000", "OTEL_TRACES_SAMPLER=parentbased_always_on"}, t.TempDir())
	s.waitServing(t)
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	var cons struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "issues", "app": "tracker",
		"url": consumer.URL + "/hooks?key=consumer-url-token", "event_types": []string{"github.issues.*"}}, &cons)

	req := githubDelivery(s.url+path, "delivery-trace-1")
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("ingress answered %d", resp.StatusCode)
	}
	var consumerTrace string
	select {
	case consumerTrace = <-received:
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the consumer never got the event")
	}
	if !strings.HasPrefix(consumerTrace, "00-"+traceID+"-") {
		t.Errorf("consumer received traceparent %q, want one in trace %s", consumerTrace, traceID)
	}
	eventually(t, 30*time.Second, "the event settles delivered", func() bool {
		evs := s.events(t)
		return len(evs) == 1 && evs[0].State == "delivered"
	})
	if n := len(rcv.Spans()); n != 0 {
		t.Fatalf("%d spans exported before the batch delay or the flush", n)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(40 * time.Second): // a hang guard: the grace is 30 s
		t.Fatal("the server did not exit after SIGTERM")
	}

	want := []string{"ingress.receive", "worker.process", "router.route", "delivery.send"}
	spans := rcv.Spans()
	byName := map[string]otlptest.Span{}
	for _, sp := range spans {
		if sp.TraceID == traceID {
			byName[sp.Name] = sp
		}
	}
	parent := "b7ad6b7169203331"
	for _, name := range want {
		sp, ok := byName[name]
		if !ok {
			t.Fatalf("no %s span in trace %s among %d exported (receiver errors %v)\n%s", name, traceID, len(spans), rcv.Errors(), s.logs)
		}
		if sp.ParentSpanID != parent || sp.Service != "intake-e2e" {
			t.Errorf("%s: parent %s service %q, want parent %s service intake-e2e", name, sp.ParentSpanID, sp.Service, parent)
		}
		parent = sp.SpanID
	}
	if consumerTrace != "00-"+traceID+"-"+byName["delivery.send"].SpanID+"-01" {
		t.Errorf("consumer traceparent %q is not the delivery span %s", consumerTrace, byName["delivery.send"].SpanID)
	}
	token := strings.TrimPrefix(path, "/webhooks/")
	for _, sp := range spans {
		for k, v := range sp.Attributes {
			for _, secret := range []string{token, githubSecret, cons.SigningSecret, "consumer-url-token", "delivery-trace-1", staffToken} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s = %q holds %q", sp.Name, k, v, secret)
				}
			}
		}
	}
}
