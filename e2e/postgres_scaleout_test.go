package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/store/postgres/pgtest"
)

// withPool bounds each process's connection pool, so that several
// processes and the other packages' tests share the server's connections.
func withPool(db string) string {
	u, err := url.Parse(db)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "8")
	u.RawQuery = q.Encode()
	return u.String()
}

// postgresEnv is what every process sharing one database needs alike: the
// master key that seals the secrets they all read.
// onePostgres launches n processes on one fresh database, all at once, with
// the same master key, and waits until each serves. It returns them and the
// database's URL.
func onePostgres(t *testing.T, n int, extra ...string) ([]*server, string) {
	t.Helper()
	db := pgtest.Database(t)
	env := postgresEnv()
	procs := make([]*server, n)
	for i := range procs {
		procs[i] = launch(t, env, t.TempDir(), append([]string{"--db", withPool(db)}, extra...)...)
	}
	for _, s := range procs {
		s.waitServing(t)
	}
	return procs, db
}

// processedOnce waits until every message s lists is settled, and checks
// the store's account of ids: each processed by one message. A message
// ignored as a duplicate is a webhook posted again after its answer was
// lost (its process killed or frozen before it answered).
func processedOnce(t *testing.T, s *server, ids []string, within time.Duration) {
	t.Helper()
	var msgs []message
	eventually(t, within, "every message settled", func() bool {
		msgs = s.messages(t)
		for _, m := range msgs {
			if !settled(m.State) {
				return false
			}
		}
		return true
	})
	processed := map[string]int{}
	for _, m := range msgs {
		switch {
		case m.State == "processed":
			processed[m.ProviderEventID]++
		case m.State == "ignored" && m.Outcome == "duplicate":
		default:
			t.Errorf("message %s (%s) is %s/%s", m.ID, m.ProviderEventID, m.State, m.Outcome)
		}
	}
	for _, id := range ids {
		if processed[id] != 1 {
			t.Errorf("delivery %s processed %d times", id, processed[id])
		}
	}
}

// everyEventDelivered waits until s lists n events, every one delivered,
// and returns them.
func everyEventDelivered(t *testing.T, s *server, n int, within time.Duration) []event {
	t.Helper()
	var events []event
	eventually(t, within, "every event delivered", func() bool {
		events = s.events(t)
		for _, e := range events {
			if e.State != "delivered" {
				return false
			}
		}
		return len(events) == n
	})
	return events
}

func postgresEnv() []string {
	key := make([]byte, 32)
	rand.Read(key)
	return []string{"INTAKE_MASTER_KEY=" + hex.EncodeToString(key)}
}

// countingConsumer is a consumer application that records every delivery
// it receives, and can hold them unanswered.
type countingConsumer struct {
	*httptest.Server
	mu       sync.Mutex
	received map[string]map[string]int  // path → webhook-id → deliveries received
	provider map[string]map[string]bool // path → provider event ids received
	gate     chan struct{}              // closed: answer at once
	held     atomic.Int64
}

func newCountingConsumer() *countingConsumer {
	c := &countingConsumer{received: map[string]map[string]int{}, provider: map[string]map[string]bool{}, gate: make(chan struct{})}
	close(c.gate)
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var env struct {
			ProviderEventID string `json:"provider_event_id"`
		}
		json.Unmarshal(b, &env)
		c.mu.Lock()
		if c.received[r.URL.Path] == nil {
			c.received[r.URL.Path], c.provider[r.URL.Path] = map[string]int{}, map[string]bool{}
		}
		c.received[r.URL.Path][r.Header.Get("webhook-id")]++
		c.provider[r.URL.Path][env.ProviderEventID] = true
		gate := c.gate
		c.mu.Unlock()
		c.held.Add(1)
		<-gate
		c.held.Add(-1)
	}))
	return c
}

// hold leaves deliveries unanswered until release.
func (c *countingConsumer) hold() {
	c.mu.Lock()
	c.gate = make(chan struct{})
	c.mu.Unlock()
}

func (c *countingConsumer) release() {
	c.mu.Lock()
	close(c.gate)
	c.mu.Unlock()
}

// got reports whether the consumer at path received every one of ids.
func (c *countingConsumer) got(path string, ids []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if !c.provider[path][id] {
			return false
		}
	}
	return true
}

func (c *countingConsumer) counts(path string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.received[path] {
		out[k] = v
	}
	return out
}

// poster posts GitHub deliveries round-robin to the processes still alive,
// moving on to the next process when one does not answer 2xx.
type poster struct {
	procs []*server
	path  string
	dead  []atomic.Bool
	mu    sync.Mutex
	acked map[string]bool
	n     atomic.Int64
}

func (p *poster) post(ids []string, clients int) {
	work := make(chan string)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for range clients {
		wg.Go(func() {
			for id := range work {
				for try := range 30 {
					s := p.procs[(int(p.n.Add(1))+try)%len(p.procs)]
					if p.isDead(s) {
						continue
					}
					resp, err := client.Do(githubDelivery(s.url+p.path, id))
					if err != nil {
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode/100 == 2 {
						p.mu.Lock()
						p.acked[id] = true
						p.mu.Unlock()
						break
					}
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

func (p *poster) isDead(s *server) bool {
	for i, q := range p.procs {
		if q == s {
			return p.dead[i].Load()
		}
	}
	return false
}

func (p *poster) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

func deliveryIDs(from, to int) []string {
	var ids []string
	for i := from; i < to; i++ {
		ids = append(ids, fmt.Sprintf("delivery-%d", i))
	}
	return ids
}

// TestThreeProcessesOnOnePostgresDeliverEveryEventOnceAndSurviveAKill runs
// three `intake serve` processes on one fresh database and posts webhooks
// to them round-robin. Every message must be processed once and every event
// delivered once per consumer; then one process is killed with SIGKILL
// while deliveries it leased hang at the consumer and webhooks keep coming,
// and the other two must take its leased work over and lose nothing.
func TestThreeProcessesOnOnePostgresDeliverEveryEventOnceAndSurviveAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the real binary")
	}
	// Routing leases last delivery timeout + lease: 5s here.
	procs, _ := onePostgres(t, 3, "--delivery-timeout", "3s")

	consumer := newCountingConsumer()
	defer consumer.Close()
	path := setupGitHub(t, procs[0])
	var orgs struct{ Items []struct{ ID string } }
	procs[1].api(t, "GET", "/api/v1/orgs", nil, &orgs)
	consumerPaths := map[string]string{} // consumer id → path
	for _, p := range []string{"/billing", "/tracker"} {
		var c struct{ ID string }
		procs[2].api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": p[1:], "app": p[1:],
			"url": consumer.URL + p, "event_types": []string{"github.issues.*"}}, &c)
		consumerPaths[c.ID] = p
	}
	p := &poster{procs: procs, path: path, dead: make([]atomic.Bool, len(procs)), acked: map[string]bool{}}

	// Three healthy processes: each event reaches each consumer exactly once.
	first := deliveryIDs(0, 150)
	p.post(first, 8)
	for path := range map[string]bool{"/billing": true, "/tracker": true} {
		eventually(t, 30*time.Second, path+" gets every event of the first round", func() bool { return consumer.got(path, first) })
		for id, n := range consumer.counts(path) {
			if n != 1 {
				t.Errorf("%s got event %s %d times while no process failed", path, id, n)
			}
		}
	}

	// One process dies with deliveries in flight and webhooks arriving.
	consumer.hold()
	second := deliveryIDs(150, 350)
	posted := make(chan struct{})
	go func() { p.post(second, 8); close(posted) }()
	eventually(t, 30*time.Second, "deliveries held while webhooks arrive", func() bool {
		return p.ackedCount() >= len(first)+len(second)/2 && consumer.held.Load() >= 30
	})
	p.dead[1].Store(true)
	procs[1].kill()
	consumer.release()
	<-posted
	if p.ackedCount() != len(first)+len(second) {
		t.Fatalf("%d webhooks acknowledged, want %d", p.ackedCount(), len(first)+len(second))
	}
	all := append(first, second...)
	for _, path := range []string{"/billing", "/tracker"} {
		eventually(t, 40*time.Second, path+" gets every event after the kill", func() bool { return consumer.got(path, all) })
	}

	// The store's account: one processed message and one delivered event per
	// webhook, one handled delivery per event and consumer.
	s := procs[0]
	processedOnce(t, s, all, 20*time.Second)
	events := everyEventDelivered(t, s, len(all), 20*time.Second)
	takenOver := 0
	for _, e := range events {
		var detail struct {
			Deliveries []struct {
				ConsumerID string `json:"consumer_id"`
				Attempt    int
				Outcome    string
			}
		}
		s.api(t, "GET", "/api/v1/events/"+e.ID, nil, &detail)
		handled := map[string]int{} // consumer path → attempt that handled it
		for _, d := range detail.Deliveries {
			if d.Outcome == "handled" {
				if handled[consumerPaths[d.ConsumerID]] != 0 {
					t.Errorf("event %s handled twice by %s", e.ID, consumerPaths[d.ConsumerID])
				}
				handled[consumerPaths[d.ConsumerID]] = d.Attempt
			}
		}
		// An attempt the killed process held left no delivery record: the
		// event's first recorded attempt is a later one.
		firstRecorded := 0
		for _, d := range detail.Deliveries {
			if firstRecorded == 0 || d.Attempt < firstRecorded {
				firstRecorded = d.Attempt
			}
		}
		if firstRecorded > 1 {
			takenOver++
		}
		for _, path := range []string{"/billing", "/tracker"} {
			attempt := handled[path]
			n := consumer.counts(path)[e.ID]
			switch {
			case attempt == 0:
				t.Errorf("event %s has no handled delivery to %s", e.ID, path)
			case n == 0:
				t.Errorf("event %s: %s never received it", e.ID, path)
			case n > 1 && attempt == 1:
				// Receiving it again is only right after an attempt that
				// never settled (killed, or timed out while held).
				t.Errorf("event %s reached %s %d times though its first attempt settled", e.ID, path, n)
			}
		}
	}
	if takenOver == 0 {
		t.Error("no event was taken over: the killed process held no leased work, so the test proved nothing")
	}
	t.Logf("%d webhooks, %d events; %d events taken over from the killed process", len(all), len(events), takenOver)
}
