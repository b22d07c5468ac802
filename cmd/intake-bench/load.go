package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// load is the shape of one run; every target gets the same.
type load struct {
	Clients   int
	Rate      float64 // webhooks per second; 0 = closed loop, as fast as the clients can
	Duration  time.Duration
	BodyBytes int
}

// target is where a run posts webhooks.
type target struct {
	name string
	urls []string // webhook n goes to urls[n % len(urls)]
	sign signer   // nil: unsigned
	mix  mixer    // non-nil: provider samples instead of signed bodies
}

// signer adds a provider's headers (signature, delivery id) to a webhook.
type signer func(h http.Header, id string, body []byte)

// webhookBody is a JSON object carrying id, padded to size bytes when size
// allows.
func webhookBody(id string, size int) []byte {
	const open, mid, end = `{"id":"`, `","pad":"`, `"}`
	pad := max(size-len(open)-len(id)-len(mid)-len(end), 0)
	b := make([]byte, 0, len(open)+len(id)+len(mid)+pad+len(end))
	b = append(b, open...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, strings.Repeat("x", pad)...)
	return append(b, end...)
}

// driver sends one run's webhooks and keeps its counts.
type driver struct {
	target target
	load   load
	prefix string   // makes ids unique across runs
	track  *tracker // nil unless end-to-end latency is measured
	client *http.Client

	sent, acked, failed atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration
	errors    map[string]int
	firstErr  error
}

// run posts webhooks to t for l.Duration and returns what it measured,
// printing a progress line to progress every second.
func run(ctx context.Context, t target, l load, track *tracker, progress io.Writer) *Run {
	tr := &http.Transport{MaxIdleConnsPerHost: l.Clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	d := &driver{
		target: t, load: l, track: track, errors: map[string]int{},
		prefix: t.name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
	}
	// Sending stops at the deadline; requests in flight then finish, so the
	// end of the run cuts no request short.
	until, cancel := context.WithTimeout(ctx, l.Duration)
	defer cancel()
	start := time.Now()
	stopProgress := d.progress(progress, start)
	if l.Rate > 0 {
		d.openLoop(ctx, until, start)
	} else {
		d.closedLoop(ctx, until)
	}
	elapsed := time.Since(start)
	stopProgress()
	if d.firstErr != nil {
		fmt.Fprintf(progress, "%s: first transport error: %v\n", t.name, d.firstErr)
	}
	return &Run{
		Target:      t.name,
		started:     start,
		Seconds:     elapsed.Seconds(),
		Sent:        int(d.sent.Load()),
		Acked:       int(d.acked.Load()),
		AckedPerSec: float64(d.acked.Load()) / elapsed.Seconds(),
		Ack:         summarize(d.latencies),
		Errors:      d.errors,
	}
}

// closedLoop keeps every client busy: each sends its next webhook as soon
// as the previous one is answered.
func (d *driver) closedLoop(ctx, until context.Context) {
	var seq atomic.Int64
	var wg sync.WaitGroup
	for range d.load.Clients {
		wg.Go(func() {
			var mine []time.Duration
			for until.Err() == nil {
				if lat, ok := d.send(ctx, seq.Add(1), time.Now()); ok {
					mine = append(mine, lat)
				}
			}
			d.keep(mine)
		})
	}
	wg.Wait()
}

// openLoop sends at a fixed rate whatever the answers do. Latency counts
// from when a webhook was due, not when a free client sent it, so a server
// that falls behind shows it instead of slowing the load down.
func (d *driver) openLoop(ctx, until context.Context, start time.Time) {
	due := make(chan time.Time, d.load.Clients)
	var seq atomic.Int64
	var wg sync.WaitGroup
	for range d.load.Clients {
		wg.Go(func() {
			var mine []time.Duration
			for at := range due {
				if lat, ok := d.send(ctx, seq.Add(1), at); ok {
					mine = append(mine, lat)
				}
			}
			d.keep(mine)
		})
	}
	interval := time.Duration(float64(time.Second) / d.load.Rate)
	for i := 0; until.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			select {
			case <-time.After(wait):
			case <-until.Done():
				continue
			}
		}
		select {
		case due <- at:
		case <-until.Done():
		}
	}
	close(due)
	wg.Wait()
}

// send posts webhook n, due at at, and returns its ack latency when it
// was acknowledged (2xx).
func (d *driver) send(ctx context.Context, n int64, at time.Time) (time.Duration, bool) {
	req, id, err := d.request(ctx, n)
	if err != nil {
		d.fail("transport", err)
		return 0, false
	}
	if d.track != nil {
		d.track.sent(id, at)
	}
	d.sent.Add(1)
	resp, err := d.client.Do(req)
	if err != nil {
		if ctx.Err() == nil { // not an interrupt cutting it short
			d.fail("transport", err)
		}
		return 0, false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	lat := time.Since(at)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		d.fail(strconv.Itoa(resp.StatusCode), nil)
		return 0, false
	}
	d.acked.Add(1)
	if d.track != nil {
		d.track.acked(id)
	}
	return lat, true
}

// request is webhook n and the id its delivery carries: a provider's
// sample from the mix, or a body of the load's size carrying the id.
func (d *driver) request(ctx context.Context, n int64) (*http.Request, string, error) {
	base := d.target.urls[int(n)%len(d.target.urls)]
	if d.target.mix != nil {
		url, h, body, id, err := d.target.mix(n, base)
		if err != nil {
			return nil, "", err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, "", err
		}
		req.Header = h
		return req, id, nil
	}
	id := d.prefix + "-" + strconv.FormatInt(n, 10)
	body := webhookBody(id, d.load.BodyBytes)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if d.target.sign != nil {
		d.target.sign(req.Header, id, body)
	}
	return req, id, nil
}

func (d *driver) fail(key string, err error) {
	d.failed.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errors[key]++
	if err != nil && d.firstErr == nil {
		d.firstErr = err
	}
}

// keep merges one client's latencies at its end, so clients never contend
// while sending.
func (d *driver) keep(ds []time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.latencies = append(d.latencies, ds...)
}

// progress prints a line every second until the returned stop is called.
func (d *driver) progress(w io.Writer, start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				acked := d.acked.Load()
				fmt.Fprintf(w, "%-8s %4.0fs  sent %d  acked %d (%d/s)  errors %d\n", d.target.name,
					now.Sub(start).Seconds(), d.sent.Load(), acked, acked-last, d.failed.Load())
				last = acked
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
