package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Sink is an HTTP consumer that answers every call 200 and records, per
// webhook it was made from, the webhook-ids (intake's event ids) of the
// calls: the same webhook-id again is a redelivery the consumer dedupes,
// another webhook-id for the same webhook a duplicate effect. A broker's
// messages are recorded the same way, by whoever reads them (Record).
type Sink struct {
	// Key names the webhook a call was made from, from its body.
	Key func(body []byte) string

	mu    sync.Mutex
	calls map[string]map[string]int // key → webhook-id → calls
}

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return // the call broke off: intake saw no answer either
	}
	s.Record(b, r.Header.Get("webhook-id"))
}

// Record records one call with body under webhookID: what ServeHTTP does
// for an HTTP call, and a broker's reader for each message it reads.
func (s *Sink) Record(body []byte, webhookID string) {
	key := s.Key(body)
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]map[string]int{}
	}
	if s.calls[key] == nil {
		s.calls[key] = map[string]int{}
	}
	s.calls[key][webhookID]++
	s.mu.Unlock()
}

// has reports whether a call for key arrived.
func (s *Sink) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls[key]) > 0
}

// Counts are, for key, how many distinct webhook-ids arrived and how many
// calls beyond the first of each.
func (s *Sink) Counts(key string) (ids, redeliveries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.calls[key] {
		ids++
		redeliveries += n - 1
	}
	return ids, redeliveries
}

// Tally is what became of the webhooks posted around one fault.
type Tally struct {
	Fault string
	// Posted is how many distinct webhooks were posted; Acked how many
	// were answered 2xx, at once or on a retry after the fault.
	Posted, Acked int
	// Answers counts the answers to posts made while the fault was on,
	// by status; Unanswered the posts that got none within the client's
	// timeout, or whose connection broke.
	Answers    map[int]int
	Unanswered int
	// Delivered is how many acknowledged webhooks reached the sink; Lost
	// how many did not by the deadline; Twice how many reached it as more
	// than one event (a duplicate effect); Redeliveries how many calls
	// repeated a webhook-id the sink had had (a retry it dedupes).
	Delivered, Lost, Twice, Redeliveries int
	// With an App: AppliedTwice is how many acknowledged webhooks the
	// application applied more than once, Unapplied how many it never
	// applied once intake had nothing left to deliver.
	AppliedTwice, Unapplied int
	withApp                 bool
	// AckAgain is the time from the fault's removal to the first 2xx;
	// Recover to every acknowledged webhook delivered.
	AckAgain, Recover time.Duration
	// AckP99 is the 99th percentile of the time to a 2xx while the fault
	// was on (for "none", of the whole run).
	AckP99 time.Duration
}

// Bad is the answers other than 2xx and 503 while the fault was on: a
// webhook intake cannot make durable is answered 503, never 500.
func (t Tally) Bad() map[int]int {
	bad := map[int]int{}
	for status, n := range t.Answers {
		if status/100 != 2 && status != http.StatusServiceUnavailable {
			bad[status] = n
		}
	}
	return bad
}

// Row is the tally as a row of docs/reliability.md's table; "applied
// twice" is "–" where the consumer was no App (a broker's reader).
func (t Tally) Row(link, store string) string {
	applied := "–"
	if t.withApp {
		applied = fmt.Sprint(t.AppliedTwice)
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %d | %d | %d | %d | %d | %s | %d | %s | %s | %s |", t.Fault, link, store,
		t.Acked, t.Answers[http.StatusServiceUnavailable], t.Unanswered, t.Delivered, t.Lost, t.Twice, applied, t.Redeliveries,
		t.AckAgain.Round(10*time.Millisecond), t.Recover.Round(10*time.Millisecond), t.AckP99.Round(time.Millisecond))
}

// Header is the table's header, for Row.
const Header = "| fault | link | store | acknowledged | 503 | unanswered | delivered | lost | twice | applied twice | redelivered | ack again | recover | ack p99 |\n" +
	"| --- | --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |"

// Run posts webhooks around one fault on a link and counts what became
// of them.
type Run struct {
	// Post posts the webhook id and returns the answer's status.
	Post func(ctx context.Context, id string) (int, error)
	// Key is the sink's key of the webhook id (what Sink.Key finds).
	Key   func(id string) string
	Proxy *Proxy
	Sink  *Sink
	// App, when set, is the consumer (its Sink is Sink): what it applied
	// is counted too, once Quiet has returned.
	App *App
	// Clients post at once while the fault is on, for During; Before
	// webhooks go first, After once ingress acknowledges again.
	Clients       int
	During        time.Duration
	Before, After int
	// Deadline bounds each wait after the fault: for ingress to answer
	// 2xx again, for every webhook to be acknowledged on a retry, and for
	// every acknowledged one to reach the sink.
	Deadline time.Duration
	// Quiet, when set, waits until intake has nothing left to deliver,
	// so redeliveries still to come are counted too.
	Quiet func(ctx context.Context) error
}

type post struct {
	id      string
	status  int // 0: no answer
	latency time.Duration
}

// Do runs f: Before webhooks, then f on while Clients post for During,
// then f removed, After webhooks once ingress acknowledges again, every
// webhook not acknowledged posted again (as a provider retries), and the
// sink watched until each acknowledged webhook reached it.
func (r Run) Do(ctx context.Context, f Fault) (Tally, error) {
	t := Tally{Fault: f.Name, Answers: map[int]int{}}
	var mu sync.Mutex
	var posts []post
	var seq int
	next := func() string {
		mu.Lock()
		defer mu.Unlock()
		seq++
		return fmt.Sprintf("%s-%d", slug(f.Name), seq)
	}
	send := func(id string) post {
		start := time.Now()
		status, err := r.Post(ctx, id)
		p := post{id: id, latency: time.Since(start)}
		if err == nil {
			p.status = status
		}
		mu.Lock()
		posts = append(posts, p)
		mu.Unlock()
		return p
	}
	for range r.Before {
		if p := send(next()); p.status/100 != 2 {
			return t, fmt.Errorf("%s: before the fault ingress answered %d", f.Name, p.status)
		}
	}
	if err := r.Proxy.Apply(f); err != nil {
		return t, err
	}
	on := time.Now()
	var during []post
	var wg sync.WaitGroup
	for range r.Clients {
		wg.Go(func() {
			for time.Since(on) < r.During && ctx.Err() == nil {
				p := send(next())
				mu.Lock()
				during = append(during, p)
				mu.Unlock()
			}
		})
	}
	select {
	case <-time.After(r.During): // the fault lasts this long
	case <-ctx.Done():
	}
	r.Proxy.Clear()
	off := time.Now()
	wg.Wait()

	for {
		if p := send(next()); p.status/100 == 2 {
			t.AckAgain = time.Since(off)
			break
		}
		if time.Since(off) > r.Deadline {
			return t, fmt.Errorf("%s: ingress did not acknowledge again within %v of the fault's removal", f.Name, r.Deadline)
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return t, err
		}
	}
	for range r.After {
		send(next())
	}

	// A provider retries what it was not answered 2xx.
	acked := map[string]bool{}
	for _, p := range posts {
		acked[p.id] = acked[p.id] || p.status/100 == 2
	}
	retryFrom := time.Now()
	for id, ok := range acked {
		for !ok {
			if ok = send(id).status/100 == 2; ok {
				acked[id] = true
				break
			}
			if time.Since(retryFrom) > r.Deadline {
				return t, fmt.Errorf("%s: webhook %s not acknowledged on retries for %v", f.Name, id, r.Deadline)
			}
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return t, err
			}
		}
	}

	deliverFrom := time.Now()
	for {
		all := true
		for id := range acked {
			all = all && r.Sink.has(r.Key(id))
		}
		if all {
			t.Recover = time.Since(off)
			break
		}
		if time.Since(deliverFrom) > r.Deadline {
			break // what is missing is lost
		}
		if err := pause(ctx, 25*time.Millisecond); err != nil {
			return t, err
		}
	}
	if r.Quiet != nil {
		if err := r.Quiet(ctx); err != nil {
			return t, fmt.Errorf("%s: %w", f.Name, err)
		}
	}

	var applied map[string]int
	if r.App != nil {
		var err error
		if applied, err = r.App.Applied(ctx); err != nil {
			return t, fmt.Errorf("%s: %w", f.Name, err)
		}
		t.withApp = true
	}
	t.Posted = len(acked)
	for id, ok := range acked {
		if r.App != nil && ok {
			switch n := applied[r.Key(id)]; {
			case n == 0:
				t.Unapplied++
			case n > 1:
				t.AppliedTwice++
			}
		}
		ids, redeliveries := r.Sink.Counts(r.Key(id))
		if ok {
			t.Acked++
			if ids == 0 {
				t.Lost++
			} else {
				t.Delivered++
			}
		}
		if ids > 1 {
			t.Twice++
		}
		t.Redeliveries += redeliveries
	}
	var lat []time.Duration
	for _, p := range during {
		if p.status == 0 {
			t.Unanswered++
			continue
		}
		t.Answers[p.status]++
	}
	sample := during
	if len(f.Toxics) == 0 {
		sample = posts
	}
	for _, p := range sample {
		if p.status/100 == 2 {
			lat = append(lat, p.latency)
		}
	}
	t.AckP99 = percentile(lat, 0.99)
	return t, nil
}

// percentile is the q-th of ds (nearest rank), zero when there are none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	i := int(float64(len(ds))*q+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("faults: stopped"), ctx.Err())
	}
}

// slug is name as a webhook id prefix.
func slug(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
