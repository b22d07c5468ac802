package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// tracker matches each webhook sent with its delivery to the consumer, by
// the id the webhook carried (the envelope's provider_event_id).
type tracker struct {
	mu       sync.Mutex
	byID     map[string]*trace
	calls    int // every delivery call of a webhook this run sent, repeats too
	firstGot time.Time
	lastGot  time.Time
}

type trace struct {
	sent       time.Time
	got        time.Time
	acked      bool
	deliveries int
}

func newTracker() *tracker { return &tracker{byID: map[string]*trace{}} }

// sent is called before the webhook leaves, so its delivery can never
// arrive first.
func (t *tracker) sent(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byID[id] = &trace{sent: at}
}

func (t *tracker) acked(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr := t.byID[id]; tr != nil {
		tr.acked = true
	}
}

// got records a delivery; it reports false for an id this run never sent.
func (t *tracker) got(id string, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.byID[id]
	if tr == nil {
		return false
	}
	if tr.deliveries == 0 {
		tr.got = at
	}
	tr.deliveries++
	if t.calls == 0 {
		t.firstGot = at
	}
	t.calls++
	t.lastGot = at
	return true
}

// deliveryRate is the calls the consumer got over the time from the first
// to the last, or nil when that time is empty.
func (t *tracker) deliveryRate(limit float64) *DeliveredRate {
	t.mu.Lock()
	defer t.mu.Unlock()
	secs := t.lastGot.Sub(t.firstGot).Seconds()
	if t.calls < 2 || secs <= 0 {
		return nil
	}
	r := &DeliveredRate{Limit: limit, Deliveries: t.calls, Seconds: secs, PerSec: float64(t.calls) / secs}
	if limit > 0 {
		r.OfLimit = r.PerSec / limit
	}
	return r
}

// pending counts acked webhooks not yet delivered, and says when the last
// delivery arrived.
func (t *tracker) pending() (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, tr := range t.byID {
		if tr.acked && tr.deliveries == 0 {
			n++
		}
	}
	return n, t.lastGot
}

// wait returns once every acked webhook was delivered, or no delivery has
// arrived for quiet.
func (t *tracker) wait(quiet time.Duration) {
	start := time.Now()
	for {
		n, last := t.pending()
		if last.Before(start) {
			last = start
		}
		if n == 0 || time.Since(last) > quiet {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// result is the end-to-end latency of every delivered webhook.
func (t *tracker) result() *E2E { return t.resultOf("") }

// resultOf is the end-to-end latency of the webhooks whose ids start with
// prefix: one run's, when a tracker serves several.
func (t *tracker) resultOf(prefix string) *E2E {
	t.mu.Lock()
	defer t.mu.Unlock()
	var e E2E
	var ds []time.Duration
	for id, tr := range t.byID {
		switch {
		case !strings.HasPrefix(id, prefix):
		case tr.deliveries > 0:
			e.Delivered++
			e.Duplicates += tr.deliveries - 1
			ds = append(ds, tr.got.Sub(tr.sent))
		case tr.acked:
			e.Missing++
		}
	}
	l := summarize(ds)
	e.Latency = &l
	return &e
}

// consumer is the local application intake delivers events to.
type consumer struct {
	url   string
	srv   *http.Server
	track *tracker
	calls atomic.Int64 // every request it got
}

// startConsumer listens on addr and records every delivery in track.
func startConsumer(addr string, track *tracker) (*consumer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &consumer{url: "http://" + ln.Addr().String() + "/deliveries", track: track}
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serve), ReadHeaderTimeout: 10 * time.Second}
	go c.srv.Serve(ln)
	return c, nil
}

func (c *consumer) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	c.calls.Add(1)
	var envelope struct {
		ProviderEventID string `json:"provider_event_id"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || json.Unmarshal(body, &envelope) != nil {
		http.Error(w, "bad envelope", http.StatusBadRequest)
		return
	}
	c.track.got(envelope.ProviderEventID, at)
	w.WriteHeader(http.StatusNoContent)
}

func (c *consumer) close() { c.srv.Close() }
