package metrics_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
)

// renders counts the registry's collections, as the store's gauges would
// cost one query each; a render may take time on the clock and wait for
// the test to let it finish.
type renders struct {
	n       atomic.Int64
	desc    *prometheus.Desc
	clock   *testkit.Clock
	takes   time.Duration
	started chan struct{} // receives once per render, when set
	release chan struct{} // a render waits for it, when set
}

func newRenders(clock *testkit.Clock) *renders {
	return &renders{clock: clock, desc: prometheus.NewDesc("test_renders", "Collections made.", nil, nil)}
}

func (r *renders) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }

func (r *renders) Collect(ch chan<- prometheus.Metric) {
	n := r.n.Add(1)
	if r.started != nil {
		r.started <- struct{}{}
	}
	if r.release != nil {
		<-r.release
	}
	r.clock.Advance(r.takes)
	ch <- prometheus.MustNewConstMetric(r.desc, prometheus.CounterValue, float64(n))
}

func scrape(t *testing.T, h http.Handler, header http.Header) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.String()
}

func TestConcurrentScrapesShareOneRenderASecond(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	const scrapers = 8
	m := metrics.New()
	r := newRenders(clock)
	// The render is slow: the store's gauges over large tables.
	r.takes = 3 * time.Second
	r.started, r.release = make(chan struct{}, scrapers), make(chan struct{})
	m.Registry.MustRegister(r)
	h := m.Handler(metrics.HandlerOptions{Clock: clock})

	bodies := make([]string, scrapers)
	var wg sync.WaitGroup
	for i := range scrapers {
		wg.Go(func() {
			code, _, body := scrape(t, h, nil)
			if code != http.StatusOK {
				t.Errorf("scrape %d: %d %s", i, code, body)
			}
			bodies[i] = body
		})
	}
	// One render is under way; every scraper, however late, takes its
	// result rather than starting another.
	<-r.started
	close(r.release)
	wg.Wait()
	if n := r.n.Load(); n != 1 {
		t.Fatalf("%d concurrent scrapes rendered %d times, want once", scrapers, n)
	}
	for i, b := range bodies {
		if b != bodies[0] {
			t.Fatalf("scrape %d differs from scrape 0:\n%s\n%s", i, b, bodies[0])
		}
	}

	// Within a second of that render the cached one is served …
	r.takes, r.started = 0, nil
	clock.Advance(999 * time.Millisecond)
	for range scrapers {
		scrape(t, h, nil)
	}
	if n := r.n.Load(); n != 1 {
		t.Fatalf("scrapes within a second of the last render rendered %d times in all, want 1", n)
	}
	// … and a second after it, a new one.
	clock.Advance(time.Millisecond)
	for range scrapers {
		_, _, body := scrape(t, h, nil)
		if !strings.Contains(body, "test_renders 2") {
			t.Fatalf("a scrape a second later:\n%s", body)
		}
	}
	if n := r.n.Load(); n != 2 {
		t.Fatalf("scrapes a second later rendered %d times in all, want 2", n)
	}
}

func TestMetricsServeThePrometheusTextFormatGzippedWhenAsked(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	m := metrics.New()
	m.Deliveries.WithLabelValues("handled").Inc()
	h := m.Handler(metrics.HandlerOptions{Clock: clock})

	code, header, body := scrape(t, h, http.Header{"Accept": {"text/plain"}})
	if code != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("%d %q", code, header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	if f := families["intake_deliveries_total"]; f == nil || f.Metric[0].GetCounter().GetValue() != 1 {
		t.Fatalf("intake_deliveries_total: %v", f)
	}

	code, header, zipped := scrape(t, h, http.Header{"Accept-Encoding": {"gzip"}})
	if code != http.StatusOK || header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip asked: %d, Content-Encoding %q", code, header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(zipped)))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(unzipped) != body {
		t.Fatalf("gzipped scrape differs:\n%s\n%s", unzipped, body)
	}
}

func TestMetricsTokenIsRequiredAsABearerWhenSet(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	m := metrics.New()
	r := newRenders(clock)
	m.Registry.MustRegister(r)
	h := m.Handler(metrics.HandlerOptions{Clock: clock, Token: "s3cret"})

	for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer s3cre", "Bearer s3cret2", "Basic czNjcmV0", "s3cret"} {
		code, header, body := scrape(t, h, http.Header{"Authorization": {auth}})
		if code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", auth, code)
		}
		if header.Get("WWW-Authenticate") == "" || strings.Contains(body, "intake_") {
			t.Errorf("Authorization %q: WWW-Authenticate %q, body %.80q", auth, header.Get("WWW-Authenticate"), body)
		}
	}
	if n := r.n.Load(); n != 0 {
		t.Fatalf("refused scrapes rendered %d times", n)
	}
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret"} {
		if code, _, body := scrape(t, h, http.Header{"Authorization": {auth}}); code != http.StatusOK || !strings.Contains(body, "test_renders") {
			t.Fatalf("Authorization %q: %d %.200s", auth, code, body)
		}
	}
	// No token set: anyone may scrape.
	if code, _, _ := scrape(t, m.Handler(metrics.HandlerOptions{Clock: clock}), nil); code != http.StatusOK {
		t.Fatalf("no token set: %d", code)
	}
}

func TestConsumerIDsAppearInMetricsOnlyWhenPerConsumerSeriesAreAsked(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	const id = "0b9e3c1a-6a43-4c1e-9a55-4f0f2d5f1d11"
	record := func(m *metrics.Metrics) string {
		m.Deliveries.WithLabelValues("handled").Inc()
		m.DeliverySeconds.WithLabelValues("handled").Observe(0.01)
		m.ConsumerOutcome(id, "handled")
		m.ConsumerLatency(id, 10*time.Millisecond)
		_, _, body := scrape(t, m.Handler(metrics.HandlerOptions{Clock: clock}), nil)
		return body
	}

	body := record(metrics.New())
	if strings.Contains(body, id) || strings.Contains(body, "consumer_id") || strings.Contains(body, "intake_consumer_") {
		t.Fatalf("by default /metrics names a consumer:\n%s", grep(body, "consumer"))
	}
	// The aggregate still counts the call.
	if !strings.Contains(body, `intake_deliveries_total{outcome="handled"} 1`) {
		t.Fatalf("the aggregate lost the call:\n%s", grep(body, "intake_deliver"))
	}

	body = record(metrics.NewWith(metrics.Options{PerConsumer: true}))
	for _, want := range []string{
		`intake_consumer_deliveries_total{consumer_id="` + id + `",outcome="handled"} 1`,
		`intake_consumer_delivery_seconds_count{consumer_id="` + id + `"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("per consumer, want %s in:\n%s", want, grep(body, "consumer"))
		}
	}
}

func grep(body, s string) string {
	var out []string
	for line := range strings.Lines(body) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
