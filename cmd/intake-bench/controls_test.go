package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseFlagsConsumerControlsNeedE2EAndProcessesADatabase(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--spawn", "--paused-consumer"}, "need --e2e"},
		{[]string{"--spawn", "--consumer-rate", "50"}, "need --e2e"},
		{[]string{"--spawn", "--e2e", "--consumer-rate", "-1"}, "not be negative"},
		{[]string{"--spawn", "--processes", "0"}, "at least 1"},
		{[]string{"--spawn", "--processes", "3"}, "--processes needs --spawn and --db"},
		{[]string{"--url", "http://x", "--token", "t", "--processes", "3"}, "--processes needs --spawn and --db"},
		{[]string{"--spawn", "--pipeline", "--db", "postgres://h/db", "--processes", "3"}, "without --pipeline"},
	} {
		if _, err := parseFlags(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want one saying %q", c.args, err, c.want)
		}
	}
	o, err := parseFlags([]string{"--spawn", "--e2e", "--paused-consumer", "--consumer-rate", "50", "--db", "postgres://h/db", "--processes", "3"})
	if err != nil || !o.pausedConsumer || o.consumerRate != 50 || o.processes != 3 {
		t.Errorf("every control at once: %+v, %v", o, err)
	}
	if o, err := parseFlags([]string{"--spawn"}); err != nil || o.processes != 1 {
		t.Errorf("default: %d processes, %v; want 1", o.processes, err)
	}
}

// controlledIntake is a fake intake with consumer controls: it routes
// every webhook to each consumer, holding a paused one's (unless it
// ignores pause), and records the controls the bench set.
type controlledIntake struct {
	*httptest.Server
	ignorePause bool

	mu        sync.Mutex
	consumers []*fakeConsumer
	patches   []string // "id rate_per_sec=N"
}

type fakeConsumer struct {
	id, name, url string
	paused        bool
	held          int
}

func newControlledIntake(t *testing.T, ignorePause bool) *controlledIntake {
	f := &controlledIntake{ignorePause: ignorePause}
	mux := http.NewServeMux()
	for path, answer := range map[string]string{
		"POST /api/v1/orgs":        `{"id":"org-1"}`,
		"POST /api/v1/connections": `{"id":"conn-1"}`,
		"POST /api/v1/endpoints":   `{"id":"ep-1","token":"tok-1"}`,
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, answer)
		})
	}
	mux.HandleFunc("POST /api/v1/consumers", func(w http.ResponseWriter, r *http.Request) {
		var c struct{ Name, URL string }
		json.NewDecoder(r.Body).Decode(&c)
		f.mu.Lock()
		fc := &fakeConsumer{id: fmt.Sprintf("c-%d", len(f.consumers)+1), name: c.Name, url: c.URL}
		f.consumers = append(f.consumers, fc)
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, fc.id)
	})
	mux.HandleFunc("POST /api/v1/consumers/{id}/pause", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c := f.consumer(r.PathValue("id"))
		if c == nil {
			http.NotFound(w, r)
			return
		}
		c.paused = true
		io.WriteString(w, `{}`)
	})
	mux.HandleFunc("PATCH /api/v1/consumers/{id}", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.patches = append(f.patches, fmt.Sprintf("%s rate_per_sec=%v", r.PathValue("id"), req["rate_per_sec"]))
		io.WriteString(w, `{}`)
	})
	mux.HandleFunc("GET /api/v1/consumers/{id}/health", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c := f.consumer(r.PathValue("id"))
		if c == nil {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"state":"paused","held":%d}`, c.held)
	})
	mux.HandleFunc("POST /webhooks/tok-1", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		env, _ := json.Marshal(map[string]any{"provider_event_id": r.Header.Get("X-GitHub-Delivery")})
		var to []string
		f.mu.Lock()
		for _, c := range f.consumers {
			if c.paused && !f.ignorePause {
				c.held++
				continue
			}
			to = append(to, c.url)
		}
		f.mu.Unlock()
		// Delivered before the ack, so every acked webhook is delivered
		// by the time the load ends.
		for _, u := range to {
			if resp, err := http.Post(u, "application/json", bytes.NewReader(env)); err == nil {
				resp.Body.Close()
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// consumer is the one with id; f.mu is held.
func (f *controlledIntake) consumer(id string) *fakeConsumer {
	for _, c := range f.consumers {
		if c.id == id {
			return c
		}
	}
	return nil
}

func controlsOptions(url string) options {
	return options{url: url, token: "t", provider: "github", clients: 2, duration: 200 * time.Millisecond,
		bodyBytes: 256, e2e: true, consumerAddr: "127.0.0.1:0", processes: 1}
}

func TestBenchPausesASecondConsumerAndReportsItsHeldRoutes(t *testing.T) {
	f := newControlledIntake(t, false)
	o := controlsOptions(f.URL)
	o.pausedConsumer = true
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.consumers) != 2 || f.consumers[0].paused || !f.consumers[1].paused || f.consumers[1].name == f.consumers[0].name {
		t.Fatalf("consumers %+v: want the measured one served and a second, differently named, paused", f.consumers)
	}
	if f.consumers[1].url == f.consumers[0].url {
		t.Errorf("both consumers deliver to %s: a call to the paused one would count as the measured one's", f.consumers[0].url)
	}
	e := r.Intake.E2E
	if r.Intake.Acked == 0 || e == nil || e.Delivered != r.Intake.Acked || e.Duplicates != 0 {
		t.Fatalf("acked %d, e2e %+v: want every acked webhook delivered once to the measured consumer", r.Intake.Acked, e)
	}
	if e.Paused == nil || e.Paused.Held != f.consumers[1].held || e.Paused.Held < r.Intake.Acked || e.Paused.Delivered != 0 {
		t.Errorf("paused %+v, the fake held %d of %d acked: want its health's held count and nothing delivered", e.Paused, f.consumers[1].held, r.Intake.Acked)
	}
	if len(f.patches) != 0 {
		t.Errorf("no --consumer-rate, yet %q", f.patches)
	}
}

// A pause that does not hold shows in the report, not as the measured
// consumer's duplicates.
func TestBenchCountsWhatAPausedConsumerWasDeliveredAnyway(t *testing.T) {
	f := newControlledIntake(t, true)
	o := controlsOptions(f.URL)
	o.pausedConsumer = true
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e := r.Intake.E2E
	if e == nil || e.Paused == nil || e.Paused.Delivered != r.Intake.Acked || e.Paused.Held != 0 || e.Duplicates != 0 {
		t.Errorf("acked %d, e2e %+v, paused %+v: want every acked webhook delivered to the paused one too, and counted there", r.Intake.Acked, e, e.Paused)
	}
}

func TestBenchLimitsTheMeasuredConsumerAndReportsTheRateDelivered(t *testing.T) {
	f := newControlledIntake(t, false)
	o := controlsOptions(f.URL)
	o.consumerRate = 50
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	patches := f.patches
	f.mu.Unlock()
	if len(patches) != 1 || patches[0] != "c-1 rate_per_sec=50" {
		t.Errorf("PATCHes %q, want the measured consumer c-1 given rate_per_sec 50", patches)
	}
	d := r.Intake.E2E.Rate
	if d == nil || d.Limit != 50 || d.Deliveries != r.Intake.E2E.Delivered || d.Seconds <= 0 || d.Seconds > r.Intake.Seconds {
		t.Fatalf("rate %+v, delivered %d in a %g s load: want every delivery counted over less than the load's time", d, r.Intake.E2E.Delivered, r.Intake.Seconds)
	}
	if d.PerSec != float64(d.Deliveries)/d.Seconds || d.OfLimit != d.PerSec/50 {
		t.Errorf("rate %+v: want per_sec = deliveries / seconds, of_limit = per_sec / 50", d)
	}
	if r.Intake.E2E.Paused != nil {
		t.Errorf("no --paused-consumer, yet %+v", r.Intake.E2E.Paused)
	}
}

func TestDeliveryRateIsEveryCallOverFirstToLastDelivery(t *testing.T) {
	tr := newTracker()
	t0 := time.Now()
	for i := range 5 {
		id := fmt.Sprint(i)
		tr.sent(id, t0)
		tr.acked(id)
	}
	if d := tr.deliveryRate(2); d != nil {
		t.Errorf("nothing delivered, rate %+v", d)
	}
	// Six calls 0.4 s apart (2 delivered twice): 6 over 2 s.
	for i, id := range []string{"0", "1", "2", "2", "3", "4"} {
		tr.got(id, t0.Add(time.Duration(i)*400*time.Millisecond))
	}
	tr.got("never-sent", t0.Add(time.Hour))
	d := tr.deliveryRate(2)
	if d == nil || d.Deliveries != 6 || math.Abs(d.Seconds-2) > 1e-9 || math.Abs(d.PerSec-3) > 1e-9 || math.Abs(d.OfLimit-1.5) > 1e-9 {
		t.Errorf("rate %+v: want 6 calls over 2 s, 3/s, 1.5 of the limit 2", d)
	}
}

func TestLoadGoesRoundRobinAcrossTheServers(t *testing.T) {
	var hits [3]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			w.WriteHeader(http.StatusAccepted)
		}))
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	got := run(context.Background(), target{name: "t", urls: urls}, load{Clients: 4, Duration: 200 * time.Millisecond}, nil, io.Discard)
	lo, hi := hits[0].Load(), hits[0].Load()
	for i := range hits {
		lo, hi = min(lo, hits[i].Load()), max(hi, hits[i].Load())
	}
	if got.Sent < 3 || hits[0].Load()+hits[1].Load()+hits[2].Load() != int64(got.Sent) || hi-lo > 1 {
		t.Errorf("sent %d; servers got %d, %d, %d: want an even share each", got.Sent, hits[0].Load(), hits[1].Load(), hits[2].Load())
	}
}

func TestReportTextShowsProcessesThePausedConsumerAndTheDeliveredRate(t *testing.T) {
	r := &Report{Mode: "open", Rate: 100, Clients: 64, Intake: &Run{Target: "intake", Errors: map[string]int{}, Processes: 3, PeakRSSBytes: 52 << 20,
		E2E: &E2E{Delivered: 6000, Latency: &Latency{P99: 61000},
			Paused: &PausedConsumer{Held: 10000},
			Rate:   &DeliveredRate{Limit: 50, Deliveries: 6000, Seconds: 119.8, PerSec: 50.08, OfLimit: 1.0016}}}}
	var out bytes.Buffer
	r.writeText(&out)
	for _, want := range []string{
		"intake: 3 processes on one database, the load round-robin across them; peak RSS of the largest: 52.0 MiB",
		"with a second consumer of the same events, paused: 10000 of its routes held at the end, 0 delivered to it",
		"consumer rate_per_sec 50: delivered 6000 over 119.8 s (first → last delivery) = 50.08/s, 1.002 of the limit",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
