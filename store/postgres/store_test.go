package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) intake.Store { return open(t) })
}

// open opens a store on a fresh database, closed when the test ends.
func open(t *testing.T) *Store {
	t.Helper()
	return openURL(t, pgtest.Database(t), 8)
}

// openURL opens another store (another process, as far as PostgreSQL can
// tell) on the database at url.
func openURL(t testing.TB, url string, maxConns int32) *Store {
	t.Helper()
	return openWith(t, Options{URL: url, MaxConns: maxConns})
}

// openWith opens a store with opts, closed when the test ends. Its leases
// are timed by the clock each call passes (the tests step it past them).
func openWith(t testing.TB, opts Options) *Store {
	t.Helper()
	opts.CallerClock = true
	return openTimedByPostgres(t, opts)
}

// openTimedByPostgres opens a store with opts as given, its leases timed by
// PostgreSQL's clock unless opts say otherwise, closed when the test ends.
func openTimedByPostgres(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// org is one org with a connection and an endpoint.
type org struct {
	org  intake.Org
	conn intake.Connection
	ep   intake.Endpoint
}

func newOrg(t testing.TB, s intake.Store, name string) org {
	t.Helper()
	ctx := context.Background()
	o := org{org: intake.Org{ID: intake.NewID(), Name: name, CreatedAt: t0}}
	if err := s.CreateOrg(ctx, o.org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("key-" + o.org.ID), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	o.conn = intake.Connection{ID: intake.NewID(), OrgID: o.org.ID, Provider: "stripe", Name: name, CreatedAt: t0,
		Config: json.RawMessage(`{"tolerance": "5m"}`)}
	if err := s.CreateConnection(ctx, o.conn); err != nil {
		t.Fatal(err)
	}
	o.ep = intake.Endpoint{ID: intake.NewID(), OrgID: o.org.ID, ConnectionID: o.conn.ID, TokenHash: []byte("hash-" + o.org.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, RatePerSec: 500, Burst: 1000, CreatedAt: t0}
	if err := s.CreateEndpoint(ctx, o.ep); err != nil {
		t.Fatal(err)
	}
	o.conn.Version, o.ep.Version = 1, 1 // as every row starts
	return o
}

func (o org) message(body string) *intake.Message {
	sum := sha256.Sum256([]byte(body))
	return &intake.Message{
		ID: intake.NewID(), OrgID: o.org.ID, ConnectionID: o.conn.ID, EndpointID: o.ep.ID,
		Method: "POST", Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: t0,
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: t0,
	}
}

func (o org) ingest(t testing.TB, s intake.Store, body string) *intake.Message {
	t.Helper()
	m := o.message(body)
	if err := s.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (o org) event(m *intake.Message, providerEventID string) intake.Event {
	return intake.Event{
		ID: intake.NewID(), OrgID: o.org.ID, ConnectionID: o.conn.ID, MessageID: m.ID, Provider: "stripe",
		Type: "stripe.invoice.paid", Kind: intake.KindEvent, ProviderEventID: providerEventID,
		OccurredAt: t0, ReceivedAt: t0, Data: json.RawMessage(`{"id": "` + providerEventID + `"}`),
		ObjectIDs: []string{"in_1"}, State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts,
		NextAttemptAt: t0, CreatedAt: t0,
	}
}

// processed takes one message through claim and settlement into one event.
func (o org) processed(t *testing.T, s intake.Store, body string) (*intake.Message, intake.Event) {
	t.Helper()
	ctx := context.Background()
	m := o.ingest(t, s, body)
	claims, err := s.ClaimMessages(ctx, t0, time.Minute, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claims %v %v", claims, err)
	}
	e := o.event(m, "evt_"+m.ID)
	ident, _ := intake.IdentityFor(m, e.ProviderEventID, e.Type, e.Kind)
	if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt,
		To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, ProviderEventID: e.ProviderEventID,
		Identity: &ident, Events: []intake.Event{e}}); err != nil {
		t.Fatal(err)
	}
	return m, e
}

func TestSameIdentityInRacingProcessesIsProcessedOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	stores := []*Store{openURL(t, url, 8), openURL(t, url, 8)}
	o := newOrg(t, stores[0], "acme")
	const n = 12
	for range n {
		o.ingest(t, stores[0], `{"id":"evt_same"}`)
	}
	claims, err := stores[0].ClaimMessages(ctx, t0, time.Minute, n)
	if err != nil || len(claims) != n {
		t.Fatalf("claimed %d (%v)", len(claims), err)
	}
	results := make([]intake.Settled, n)
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Go(func() {
			m := c.Message
			ident, _ := intake.IdentityFor(&m, "evt_same", "stripe.invoice.paid", intake.KindEvent)
			e := o.event(&m, "evt_same")
			out, err := stores[i%2].SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt,
				To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, Identity: &ident, Events: []intake.Event{e}})
			if err != nil {
				t.Error(err)
			}
			results[i] = out
		})
	}
	wg.Wait()
	var processed, duplicates, events int
	for _, r := range results {
		switch {
		case r.State == intake.MessageProcessed:
			processed++
		case r.State == intake.MessageIgnored && r.Outcome == intake.OutcomeDuplicate:
			duplicates++
		}
		events += len(r.Events)
	}
	if processed != 1 || duplicates != n-1 || events != 1 {
		t.Fatalf("%d processed, %d duplicates, %d events; want 1, %d, 1", processed, duplicates, events, n-1)
	}
}

func TestRacingProcessesClaimEachMessageOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	stores := []*Store{openURL(t, url, 4), openURL(t, url, 4), openURL(t, url, 4)}
	o := newOrg(t, stores[0], "acme")
	const n = 300
	for i := range n {
		o.ingest(t, stores[i%3], fmt.Sprintf(`{"n":%d}`, i))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Go(func() {
			for {
				c, err := stores[i%3].ClaimMessages(ctx, t0, time.Minute, 5)
				if err != nil {
					t.Error(err)
					return
				}
				if len(c) == 0 {
					return
				}
				mu.Lock()
				for _, x := range c {
					seen[x.Message.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d distinct messages, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("message %s claimed %d times", id, k)
		}
	}
}

func TestCommitInOneProcessWakesAnother(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	a, b := openURL(t, url, 4), openURL(t, url, 4)
	o := newOrg(t, a, "acme")
	messages, stop := b.Listen(intake.TopicMessages)
	defer stop()
	events, stopEvents := b.Listen(intake.TopicEvents)
	defer stopEvents()

	check := func(what string) {
		t.Helper()
		waitListening(t, a, 2)
		drain(messages, events)
		m := o.ingest(t, a, `{"id":"`+intake.NewID()+`"}`)
		wait(t, messages, what+": ingest in a wakes b's workers")
		claims, err := a.ClaimMessages(ctx, t0, time.Minute, 1)
		if err != nil || len(claims) != 1 {
			t.Fatalf("claims %v %v", claims, err)
		}
		drain(messages, events)
		if _, err := a.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt,
			To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, Events: []intake.Event{o.event(m, "evt_"+m.ID)}}); err != nil {
			t.Fatal(err)
		}
		wait(t, events, what+": events settled in a wake b's routers")
	}
	check("connected")

	// Both listeners lose their connections; they reconnect and listen again.
	if _, err := a.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	check("reconnected")
}

// waitListening waits until n listener connections are listening.
func waitListening(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var k int
		if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN%' AND state = 'idle'`).Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d listeners listening, want %d", k, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func drain(chs ...<-chan struct{}) {
	time.Sleep(50 * time.Millisecond) // wake-ups of the reconnect still in flight
	for _, ch := range chs {
		select {
		case <-ch:
		default:
		}
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no wake-up in 5s", what)
	}
}

func TestProviderBytesPostgreSQLCannotHoldAreStoredReplaced(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	o := newOrg(t, s, "acme")
	m := o.ingest(t, s, "\x00\xff raw bytes stay as received")
	claims, err := s.ClaimMessages(ctx, t0, time.Minute, 1)
	if err != nil || len(claims) != 1 || string(claims[0].Message.Body) != "\x00\xff raw bytes stay as received" {
		t.Fatalf("claims %+v %v", claims, err)
	}
	e := o.event(m, "evt_\x00\xff")
	e.Data = json.RawMessage("{\"s\":\"\xff\"}")
	e.Type = "stripe.\xffodd"
	ident, _ := intake.IdentityFor(m, e.ProviderEventID, e.Type, e.Kind)
	out, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt,
		To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, ProviderEventID: e.ProviderEventID,
		ErrorMessage: "bad \x00 byte", Identity: &ident, Events: []intake.Event{e}})
	if err != nil || len(out.Events) != 1 {
		t.Fatalf("settle = %+v %v", out, err)
	}
	got, err := s.Event(ctx, intake.Scope{}, e.ID)
	if err != nil || got.ProviderEventID != "evt_\uFFFD\uFFFD" || string(got.Data) != "{\"s\":\"\uFFFD\"}" {
		t.Fatalf("event = %+v %v", got, err)
	}
}

func TestRetentionRerouteCountsAndStats(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	a, b := newOrg(t, s, "a"), newOrg(t, s, "b")
	m, e := a.processed(t, s, `{"n":1}`)
	b.processed(t, s, `{"n":2}`)
	b.ingest(t, s, `{"n":3}`)

	if n, err := s.CountMessages(ctx, intake.Scope{OrgID: b.org.ID}, intake.MessageFilter{}); err != nil || n != 2 {
		t.Fatalf("org b counts %d (%v)", n, err)
	}
	if n, _ := s.CountMessages(ctx, intake.Scope{}, intake.MessageFilter{State: intake.MessageQueued, Since: t0, Until: t0.Add(time.Second)}); n != 1 {
		t.Fatalf("staff counts %d queued", n)
	}
	st, err := s.Stats(ctx, t0.Add(time.Minute))
	if err != nil || st.Messages[intake.MessageProcessed] != 2 || st.Messages[intake.MessageQueued] != 1 ||
		st.Events[[2]string{"stripe", "pending"}] != 2 || !st.OldestDueMessage.Equal(t0) || !st.OldestDueEvent.Equal(t0) {
		t.Fatalf("stats = %+v %v", st, err)
	}

	claims, err := s.ClaimEvents(ctx, t0, time.Minute, 10)
	if err != nil || len(claims) != 2 {
		t.Fatalf("event claims %d %v", len(claims), err)
	}
	for _, c := range claims {
		// No consumer selected: the fan-out writes no routes.
		if _, err := s.FanOut(ctx, t0, intake.FanOut{EventID: c.Event.ID, Attempt: c.Attempt}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RerouteEvent(ctx, intake.Scope{OrgID: b.org.ID}, e.ID, t0); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("org b re-routed org a's event: %v", err)
	}
	if err := s.RerouteEvent(ctx, intake.Scope{OrgID: a.org.ID}, e.ID, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RerouteEvent(ctx, intake.Scope{}, e.ID, t0); intake.ErrorCode(err) != intake.ECONFLICT {
		t.Fatalf("re-routed a pending event: %v", err)
	}
	if got, _ := s.Event(ctx, intake.Scope{}, e.ID); got.State != intake.EventPending || got.MaxAttempts != got.Attempt+intake.DefaultMaxAttempts {
		t.Fatalf("re-routed event = %+v", got)
	}

	// The bodies searchable already: the search indexer, locking one,
	// would make the drop skip it.
	if _, err := s.pool.Exec(ctx, `UPDATE message_bodies SET searchable = true`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DropBodies(ctx, t0.Add(time.Hour), 0, 10); err != nil || n != 2 {
		t.Fatalf("dropped %d bodies (%v), want the 2 settled", n, err)
	}
	if _, err := s.MessageBody(ctx, intake.Scope{}, m.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("body after drop: %v", err)
	}
	// a's message has an event being routed again: it stays.
	if n, err := s.DeleteSettled(ctx, t0.Add(time.Hour), 0, 10); err != nil || n != 1 {
		t.Fatalf("deleted %d messages (%v), want b's settled one", n, err)
	}
	if page, _ := s.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{}); len(page.Items) != 2 {
		t.Fatalf("%d messages left, want 2", len(page.Items))
	}
}

// TestSameProviderEventInRacingProcessesMakesOneEvent: messages with no
// identity to judge (items re-sent in other batches) that name one provider
// event, settled at once by two processes: one event is created, and each
// settle reports what it created, though each decided on a read that could
// not see the other's uncommitted event.
func TestSameProviderEventInRacingProcessesMakesOneEvent(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	stores := []*Store{openURL(t, url, 8), openURL(t, url, 8)}
	o := newOrg(t, stores[0], "acme")
	const n = 12
	for i := range n {
		o.ingest(t, stores[0], fmt.Sprintf(`{"batch":%d,"items":[{"id":"evt_item"}]}`, i))
	}
	claims, err := stores[0].ClaimMessages(ctx, t0, time.Minute, n)
	if err != nil || len(claims) != n {
		t.Fatalf("claimed %d (%v)", len(claims), err)
	}
	created := make([]int, n)
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Go(func() {
			m := c.Message
			out, err := stores[i%2].SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt,
				To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, Events: []intake.Event{o.event(&m, "evt_item")}})
			if err != nil || out.State != intake.MessageProcessed {
				t.Errorf("settle: %+v %v", out, err)
			}
			created[i] = len(out.Events)
		})
	}
	wg.Wait()
	reported := 0
	for _, n := range created {
		reported += n
	}
	stored := stores[0].scalar(t, `SELECT count(*)::text FROM events WHERE provider_event_id = 'evt_item'`)
	if reported != 1 || stored != "1" {
		t.Fatalf("the settles reported %d events created and %s are stored; want 1 and 1", reported, stored)
	}
}
