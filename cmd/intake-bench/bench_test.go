package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentileIsNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	for _, c := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 99, 0},
		{[]time.Duration{ms(7)}, 50, ms(7)},
		{[]time.Duration{ms(7)}, 99, ms(7)},
		{hundred, 0, ms(1)},
		{hundred, 50, ms(50)},
		{hundred, 90, ms(90)},
		{hundred, 99, ms(99)},
		{hundred, 99.5, ms(100)},
		{hundred, 100, ms(100)},
		{[]time.Duration{ms(1), ms(2), ms(3)}, 50, ms(2)},
		{[]time.Duration{ms(1), ms(2), ms(3)}, 99, ms(3)},
	} {
		if got := percentile(c.sorted, c.p); got != c.want {
			t.Errorf("percentile(%d values, %g) = %v, want %v", len(c.sorted), c.p, got, c.want)
		}
	}
}

func TestSummarizeSortsAndReportsMilliseconds(t *testing.T) {
	got := summarize([]time.Duration{ms(4), ms(1), ms(3), ms(2), 1500 * time.Microsecond})
	want := Latency{P50: 2, P90: 4, P99: 4, Max: 4}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
}

func TestWebhookBodyIsJSONOfTheAskedSizeWithItsID(t *testing.T) {
	for _, size := range []int{0, 10, 64, 2048} {
		b := webhookBody("run-42", size)
		var v struct{ ID string }
		if err := json.Unmarshal(b, &v); err != nil || v.ID != "run-42" {
			t.Fatalf("size %d: %s is not a JSON object with id run-42: %v", size, b, err)
		}
		if size >= 64 && len(b) != size {
			t.Errorf("size %d: body is %d bytes", size, len(b))
		}
	}
}

func TestReportTextShowsBothTargetsRatioRSSAndWhyE2EWasSkipped(t *testing.T) {
	r := &Report{
		Mode: "closed", Clients: 64, BodyBytes: 2048, Duration: "15s", Provider: "github",
		Baseline: &Run{Target: "baseline", Acked: 300000, AckedPerSec: 20000, Ack: Latency{P50: 2, P90: 4, P99: 8, Max: 20}, Errors: map[string]int{}},
		Intake: &Run{Target: "intake", Acked: 90000, AckedPerSec: 6000, Ack: Latency{P50: 9, P90: 15, P99: 21.5, Max: 40},
			Errors: map[string]int{"503": 3, "transport": 1}, PeakRSSBytes: 48 << 20, E2E: &E2E{Skipped: "no routing"}},
		Ratio: 0.3,
	}
	var out bytes.Buffer
	r.writeText(&out)
	for _, want := range []string{
		"closed loop, 64 clients, 2048-byte bodies, 15s, provider github",
		"baseline  300000  20000",
		"intake   90000   6000",
		"21.50",
		"503:3 transport:1",
		"intake/baseline req/s: 0.30",
		"intake peak RSS: 48.0 MiB",
		"end-to-end: skipped: no routing",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReportJSONOmitsWhatWasNotMeasured(t *testing.T) {
	r := &Report{Mode: "open", Rate: 1000, Clients: 64, Intake: &Run{Target: "intake", Errors: map[string]int{}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{`"baseline"`, `"ratio"`, `"peak_rss_bytes"`, `"e2e"`} {
		if bytes.Contains(b, []byte(absent)) {
			t.Errorf("%s in %s", absent, b)
		}
	}
}

func TestParseVmHWMReadsPeakRSSInBytes(t *testing.T) {
	status := []byte("Name:\tintake\nVmPeak:\t 1300000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40000 kB\n")
	got, err := parseVmHWM(status)
	if err != nil || got != 50<<20 {
		t.Errorf("parseVmHWM = %d, %v; want %d", got, err, 50<<20)
	}
	if _, err := parseVmHWM([]byte("Name:\tx\n")); err == nil {
		t.Error("no VmHWM line: no error")
	}
}

func TestClosedLoopCountsAcksAndErrorsByStatus(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if n.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	got := run(context.Background(), target{name: "t", urls: []string{srv.URL}}, load{Clients: 4, Duration: 200 * time.Millisecond, BodyBytes: 256}, nil, io.Discard)
	if got.Acked == 0 || got.Acked+got.Errors["503"] != got.Sent || len(got.Errors) != 1 {
		t.Errorf("sent %d, acked %d, errors %v: want every request acked or a 503", got.Sent, got.Acked, got.Errors)
	}
	if int64(got.Sent) != n.Load() {
		t.Errorf("sent %d, server saw %d", got.Sent, n.Load())
	}
}

func TestOpenLoopSendsAtTheRate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer srv.Close()
	got := run(context.Background(), target{name: "t", urls: []string{srv.URL}}, load{Clients: 4, Rate: 100, Duration: 500 * time.Millisecond}, nil, io.Discard)
	// 100/s for 0.5 s is 50 due times (the first at 0); a busy machine may
	// reach the deadline before sending the last few.
	if got.Sent < 25 || got.Sent > 51 || got.Acked != got.Sent {
		t.Errorf("sent %d, acked %d: want about 50, all acked", got.Sent, got.Acked)
	}
}

func TestTrackerMatchesDeliveriesToSentWebhooksByProviderEventID(t *testing.T) {
	tr := newTracker()
	t0 := time.Now()
	for _, id := range []string{"a", "b", "c"} {
		tr.sent(id, t0)
		tr.acked(id)
	}
	tr.sent("d", t0) // never acked, never delivered: neither missing nor delivered
	c := &consumer{track: tr}
	for _, id := range []string{"a", "b", "a", "unknown"} {
		env, _ := json.Marshal(map[string]any{"id": "evt", "provider_event_id": id, "received_at": t0})
		w := httptest.NewRecorder()
		c.serve(w, httptest.NewRequest("POST", "/deliveries", bytes.NewReader(env)))
		if w.Code != http.StatusNoContent {
			t.Fatalf("delivery of %s: status %d", id, w.Code)
		}
	}
	e := tr.result()
	if e.Delivered != 2 || e.Missing != 1 || e.Duplicates != 1 || e.Latency == nil || e.Latency.Max <= 0 {
		t.Errorf("result = %+v, want 2 delivered, 1 missing (c), 1 duplicate (a)", e)
	}
}

// The load must be what intake accepts as genuine, or the bench would
// measure signature failures.
func TestGitHubSignatureVerifiesWithIntakesAdapter(t *testing.T) {
	a, ok := provider.Lookup("github")
	if !ok {
		t.Fatal("no github adapter")
	}
	body := webhookBody("delivery-1", 2048)
	h := http.Header{}
	githubSigner([]byte("s3cret"))(h, "delivery-1", body)
	req := &provider.Request{Method: "POST", Header: h, Body: body, ReceivedAt: time.Now()}
	if err := a.Verify(req, [][]byte{[]byte("s3cret")}, provider.Config{}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	in, err := a.Interpret(req, provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(in)
	if !bytes.Contains(b, []byte("delivery-1")) || !bytes.Contains(b, []byte("github.push")) {
		t.Errorf("interpretation %s lacks the delivery id or type github.push", b)
	}
}

// fakeIntake answers the admin API calls intake-bench makes and, when it
// routes, delivers every webhook to the registered consumer.
func fakeIntake(t *testing.T, routes bool) *httptest.Server {
	var consumerURL atomic.Value
	mux := http.NewServeMux()
	for path, answer := range map[string]string{
		"POST /api/v1/orgs":        `{"id":"org-1"}`,
		"POST /api/v1/connections": `{"id":"conn-1"}`,
		"POST /api/v1/endpoints":   `{"id":"ep-1","token":"tok-1","url":"http://elsewhere/webhooks/tok-1"}`,
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, answer)
		})
	}
	if routes {
		mux.HandleFunc("POST /api/v1/consumers", func(w http.ResponseWriter, r *http.Request) {
			var c struct{ URL string }
			json.NewDecoder(r.Body).Decode(&c)
			consumerURL.Store(c.URL)
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"c-1","signing_secret":"whsec_x"}`)
		})
	}
	mux.HandleFunc("POST /webhooks/tok-1", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-GitHub-Delivery")
		w.WriteHeader(http.StatusOK)
		if u, ok := consumerURL.Load().(string); ok {
			env, _ := json.Marshal(map[string]any{"provider_event_id": id, "received_at": time.Now()})
			go func() {
				if resp, err := http.Post(u, "application/json", bytes.NewReader(env)); err == nil {
					resp.Body.Close()
				}
			}()
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestBenchMeasuresEndToEndThroughTheConsumer(t *testing.T) {
	srv := fakeIntake(t, true)
	o := options{url: srv.URL, token: "t", provider: "github", clients: 2, duration: 200 * time.Millisecond,
		bodyBytes: 256, baseline: true, e2e: true, consumerAddr: "127.0.0.1:0"}
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e := r.Intake.E2E
	if r.Intake.Acked == 0 || e == nil || e.Skipped != "" || e.Delivered != r.Intake.Acked || e.Missing != 0 {
		t.Fatalf("acked %d, e2e %+v: want every acked webhook delivered", r.Intake.Acked, e)
	}
	if r.Baseline == nil || r.Ratio <= 0 {
		t.Errorf("baseline %+v, ratio %g", r.Baseline, r.Ratio)
	}
}

func TestBenchSkipsEndToEndWhenTheServerHasNoConsumers(t *testing.T) {
	srv := fakeIntake(t, false)
	o := options{url: srv.URL, token: "t", provider: "none", clients: 1, duration: 50 * time.Millisecond, e2e: true, consumerAddr: "127.0.0.1:0"}
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if e := r.Intake.E2E; e == nil || !strings.Contains(e.Skipped, "404") {
		t.Errorf("e2e = %+v, want skipped with the 404", e)
	}
}
