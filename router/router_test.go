package router_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/router"
	"github.com/intakehq/intake/store/sqlite"
)

type env struct {
	store  *sqlite.Store
	sealer *seal.Sealer
	clock  *testkit.Clock
	org    intake.Org
	conn   intake.Connection
	ep     intake.Endpoint
	r      *router.Router
	// truncate makes the next events' data truncated, as adapters mark
	// payloads over 64 KiB.
	truncate bool
	// header and query are the next events' original request's; data,
	// when set, their data.
	header http.Header
	query  string
	data   string
	// occurred, when set, is the next events' occurred_at.
	occurred time.Time
	// planned makes the next events' settles write their fan-out, judged
	// by judger before, as a worker's do.
	planned bool
	calls   *handoff.Calls
	judger  *fanout.Judger
}

func setup(t *testing.T, opts ...func(*router.Config)) *env {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sealer := testkit.Sealer(t)
	e := &env{store: s, sealer: sealer, clock: testkit.NewClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
	e.org = intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: e.clock.Now()}
	e.conn = intake.Connection{ID: intake.NewID(), OrgID: e.org.ID, Provider: "stripe", Name: "s", CreatedAt: e.clock.Now()}
	e.ep = intake.Endpoint{ID: intake.NewID(), OrgID: e.org.ID, ConnectionID: e.conn.ID, TokenHash: []byte(e.org.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	for _, err := range []error{s.CreateOrg(ctx, e.org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(e.org.ID)}), s.CreateConnection(ctx, e.conn), s.CreateEndpoint(ctx, e.ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	e.calls = handoff.NewCalls()
	cfg := router.Config{Store: s, Sealer: sealer, Clock: e.clock, Backoff: intake.Backoff{Base: 10 * time.Second}, Calls: e.calls,
		BodyURLs: bodyurl.Signer{Key: []byte("body-url-key"), PublicURL: "https://intake.example.com"},
		Sender:   delivery.NewSender(delivery.Options{Timeout: 5 * time.Second, Policy: delivery.DefaultPolicy()}),
		Rules:    testkit.Rules(t)}
	for _, o := range opts {
		o(&cfg)
	}
	// The Judger the worker would share with the router, built as serve
	// builds it from the router's settings.
	e.judger = fanout.New(fanout.Config{Store: cfg.Store, BodyURLs: cfg.BodyURLs, Clock: cfg.Clock, Lease: cfg.Lease,
		MaxEvents: cfg.MaxEvents, ConsumerShare: cfg.ConsumerShare, Pressure: cfg.Pressure, Rules: cfg.Rules, Metrics: cfg.Metrics,
		Logger: cfg.Logger})
	cfg.FanOut = e.judger
	e.r = router.New(cfg)
	return e
}

// consumer registers a consumer at url and returns it with its secret.
func (e *env) consumer(t *testing.T, app, url string, completion bool, types ...string) (intake.Consumer, string) {
	t.Helper()
	secret := delivery.NewSecret()
	c := intake.Consumer{ID: intake.NewID(), OrgID: e.org.ID, Name: app, App: app, URL: url, EventTypes: types,
		Completion: completion, Enabled: true, CreatedAt: e.clock.Now()}
	c.SealedSecret = e.sealer.Seal([]byte(secret), []byte(c.ID))
	if err := e.store.CreateConsumer(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c.Version = 1 // as every row starts
	return c, secret
}

// event makes one pending event of typ the way processing does.
func (e *env) event(t *testing.T, typ string, objectIDs ...string) string {
	t.Helper()
	ctx := context.Background()
	body := fmt.Sprintf(`{"type":%q,"n":%q}`, typ, intake.NewID())
	if e.data != "" {
		body = e.data
	}
	sum := sha256.Sum256([]byte(body))
	m := &intake.Message{ID: intake.NewID(), OrgID: e.org.ID, ConnectionID: e.conn.ID, EndpointID: e.ep.ID, Method: "POST",
		Header: e.header, Query: e.query, Body: []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
		MaxAttempts: 6, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(ctx, m); err != nil {
		t.Fatal(err)
	}
	claims, err := e.store.ClaimMessages(ctx, e.clock.Now(), time.Minute, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %v %d", err, len(claims))
	}
	occurred := e.clock.Now()
	if !e.occurred.IsZero() {
		occurred = e.occurred
	}
	ev := intake.Event{ID: intake.NewID(), OrgID: e.org.ID, ConnectionID: e.conn.ID, MessageID: m.ID, Provider: "stripe",
		Type: typ, Kind: intake.KindEvent, ProviderEventID: "evt_" + m.ID, OccurredAt: occurred, ReceivedAt: e.clock.Now(),
		Data: json.RawMessage(body), DataTruncated: e.truncate, ObjectIDs: objectIDs, State: intake.EventPending, MaxAttempts: 6,
		NextAttemptAt: e.clock.Now(), CreatedAt: e.clock.Now()}
	st := intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt,
		To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, Events: []intake.Event{ev}}
	var judged fanout.Judged
	if e.planned {
		if judged = e.judger.Judge(ctx, m, st.Events, nil); judged.FanOuts == nil {
			t.Fatal("no fan-out: the consumers could not be read")
		}
		st.FanOuts = judged.FanOuts
	}
	out, err := e.store.SettleMessage(ctx, e.clock.Now(), st)
	if err != nil || len(out.Events) != 1 {
		t.Fatalf("settle: %v %+v", err, out)
	}
	if e.planned {
		// As the worker does: the slots of routes not leased are given
		// back, and the router's loop makes the calls handed over, or its
		// next step (RunOnce, Wait).
		e.judger.Settled(judged, out)
		e.calls.Give(handoff.Settled{OrgID: m.OrgID, FanOuts: st.FanOuts, Settled: out})
	}
	return ev.ID
}

func (e *env) run(t *testing.T) int {
	t.Helper()
	n, err := e.r.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) get(t *testing.T, id string) (intake.Event, []intake.Delivery) {
	t.Helper()
	ev, err := e.store.Event(context.Background(), intake.Scope{}, id)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := e.store.Deliveries(context.Background(), intake.Scope{}, id)
	if err != nil {
		t.Fatal(err)
	}
	return ev, ds
}

// recorder is a consumer that answers with the status its test sets and
// remembers every delivery it got.
type recorder struct {
	mu       sync.Mutex
	status   int
	header   http.Header
	answer   string
	got      []*http.Request
	bodies   [][]byte
	received chan string // event ids, when set
}

func newRecorder(t *testing.T, status int) (*recorder, string) {
	rec := &recorder{status: status, header: http.Header{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.got = append(rec.got, r)
		rec.bodies = append(rec.bodies, body)
		status, answer := rec.status, rec.answer
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		ch := rec.received
		rec.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, answer)
		if ch != nil {
			ch <- r.Header.Get("webhook-id")
		}
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func (r *recorder) calls() int     { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) }
func (r *recorder) set(status int) { r.mu.Lock(); r.status = status; r.mu.Unlock() }

func TestFailingConsumerAloneIsRetriedAndBothHandledIsDelivered(t *testing.T) {
	e := setup(t)
	okRec, okURL := newRecorder(t, 200)
	badRec, badURL := newRecorder(t, 500)
	e.consumer(t, "billing", okURL, false, "stripe.invoice.*")
	e.consumer(t, "ledger", badURL, false, "stripe.invoice.paid")
	id := e.event(t, "stripe.invoice.paid")

	e.run(t)
	ev, ds := e.get(t, id)
	if ev.State != intake.EventRetrying || len(ds) != 2 || okRec.calls() != 1 || badRec.calls() != 1 {
		t.Fatalf("after the first calls: %s, %d deliveries, calls %d/%d", ev.State, len(ds), okRec.calls(), badRec.calls())
	}
	// The failed consumer's second call is due after the backoff's 10 s,
	// not before.
	badRec.set(200)
	e.clock.Advance(10*time.Second - time.Millisecond)
	e.run(t)
	if badRec.calls() != 1 {
		t.Fatal("retried before the backoff")
	}
	e.clock.Advance(time.Millisecond)
	e.run(t)
	ev, ds = e.get(t, id)
	if ev.State != intake.EventDelivered || okRec.calls() != 1 || badRec.calls() != 2 {
		t.Fatalf("after the retry: %s, calls %d/%d (the handled consumer must not be called again)", ev.State, okRec.calls(), badRec.calls())
	}
	if len(ds) != 3 || ds[2].Attempt != 2 || ds[2].Outcome != intake.DeliveryHandled || ds[2].StatusCode != 200 {
		t.Fatalf("deliveries = %+v", ds)
	}
}

// dueAfter reports the consumer's next call comes exactly d from now:
// none a moment before, one at d.
func (e *env) dueAfter(t *testing.T, rec *recorder, d time.Duration) {
	t.Helper()
	before := rec.calls()
	e.clock.Advance(d - time.Millisecond)
	e.run(t)
	if rec.calls() != before {
		t.Fatalf("called again %v early", time.Millisecond)
	}
	e.clock.Advance(time.Millisecond)
	e.run(t)
	if rec.calls() != before+1 {
		t.Fatalf("not called again %v after the failure", d)
	}
}

func TestIgnoredAnswerCountsAsDone(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 202)
	rec.answer = `{"outcome":"ignored"}`
	e.consumer(t, "app", url, false, "*")
	id := e.event(t, "stripe.charge.failed")
	e.run(t)
	ev, ds := e.get(t, id)
	if ev.State != intake.EventDelivered || len(ds) != 1 || ds[0].Outcome != intake.DeliveryIgnored {
		t.Fatalf("event %s deliveries %+v", ev.State, ds)
	}
}

func TestRetryAfterIsHonouredUpToItsCap(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 503)
	rec.header.Set("Retry-After", "120")
	e.consumer(t, "app", url, false, "*")
	e.event(t, "stripe.invoice.paid")
	e.run(t)
	e.dueAfter(t, rec, 120*time.Second)

	capped := setup(t, func(c *router.Config) {
		c.Sender = delivery.NewSender(delivery.Options{MaxRetryAfter: time.Minute, Policy: delivery.DefaultPolicy()})
	})
	rec2, url2 := newRecorder(t, 429)
	rec2.header.Set("Retry-After", "86400")
	capped.consumer(t, "app", url2, false, "*")
	capped.event(t, "stripe.invoice.paid")
	capped.run(t)
	capped.dueAfter(t, rec2, time.Minute)
}

func TestTimeoutIsARetryAndTheSixthFailingAttemptIsDead(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer hang.Close()
	defer close(release) // before Close, which waits for the handlers
	// Counted per consumer to read the calls of this one.
	m := metrics.NewWith(metrics.Options{PerConsumer: true})
	e := setup(t, func(c *router.Config) {
		c.Sender = delivery.NewSender(delivery.Options{Timeout: 50 * time.Millisecond, Policy: delivery.DefaultPolicy()})
		c.Metrics = m
	})
	cons, _ := e.consumer(t, "app", hang.URL, false, "*")
	id := e.event(t, "stripe.invoice.paid")
	for attempt := 1; attempt <= 6; attempt++ {
		if n := e.run(t); n == 0 {
			t.Fatalf("attempt %d was not made", attempt)
		}
		ev, ds := e.get(t, id)
		last := ds[len(ds)-1]
		// The call that spent the last attempt is recorded dead.
		outcome, want := intake.DeliveryRetry, intake.EventRetrying
		if attempt == 6 {
			outcome, want = intake.DeliveryDead, intake.EventDead
		}
		if last.Outcome != outcome || last.Error != "timeout" || last.Attempt != attempt {
			t.Fatalf("attempt %d delivery = %+v, want %s", attempt, last, outcome)
		}
		if ev.State != want {
			t.Fatalf("after attempt %d: %s, want %s", attempt, ev.State, want)
		}
		// Past the backoff, well within the 72 h that would disable the
		// consumer.
		e.clock.Advance(6 * time.Hour)
	}
	if n := e.run(t); n != 0 {
		t.Fatal("a dead event was claimed")
	}
	// The metrics count the calls as they were recorded.
	for outcome, want := range map[string]float64{intake.DeliveryRetry: 5, intake.DeliveryDead: 1} {
		if got := testutil.ToFloat64(m.ConsumerDeliveries.WithLabelValues(cons.ID, outcome)); got != want {
			t.Errorf("%s calls counted %v, want %v", outcome, got, want)
		}
	}
}

func TestNoMatchingConsumerIsKeptAndALaterConsumerDoesNotRerouteIt(t *testing.T) {
	e := setup(t)
	_, url := newRecorder(t, 200)
	e.consumer(t, "app", url, false, "github.*")
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventNoConsumer {
		t.Fatalf("state %s", ev.State)
	}
	rec, url2 := newRecorder(t, 200)
	e.consumer(t, "late", url2, false, "stripe.*")
	e.clock.Advance(time.Hour)
	if n := e.run(t); n != 0 || rec.calls() != 0 {
		t.Fatalf("registering a consumer re-routed the event (%d claimed, %d calls)", n, rec.calls())
	}
	if ev, _ := e.get(t, id); ev.State != intake.EventNoConsumer {
		t.Fatalf("state %s", ev.State)
	}
}

// TestSubjectLinkSendsOnlyToTheInitiatingAppsCompletionConsumer, whether the
// event is fanned out on a claim or planned with its settle: a plan judged
// before the settle found the subject is not used.
func TestSubjectLinkSendsOnlyToTheInitiatingAppsCompletionConsumer(t *testing.T) {
	for _, planned := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "planned"}[planned], func(t *testing.T) { subjectLinks(t, planned) })
	}
}

func subjectLinks(t *testing.T, planned bool) {
	e := setup(t)
	e.planned = planned
	ctx := context.Background()
	general, gURL := newRecorder(t, 200)
	completion, cURL := newRecorder(t, 200)
	otherApp, oURL := newRecorder(t, 200)
	e.consumer(t, "billing", gURL, false, "stripe.*")
	e.consumer(t, "billing", cURL, true, "stripe.*")
	e.consumer(t, "crm", oURL, true, "stripe.*")
	link := intake.SubjectLink{ID: intake.NewID(), ConnectionID: e.conn.ID, ProviderObjectID: "in_123", App: "billing",
		RecordID: "inv-42", CreatedAt: e.clock.Now()}
	if err := e.store.PutSubjectLink(ctx, intake.Scope{OrgID: e.org.ID}, link); err != nil {
		t.Fatal(err)
	}
	id := e.event(t, "stripe.invoice.paid", "in_123")
	e.run(t)
	ev, _ := e.get(t, id)
	if ev.Subject == nil || ev.Subject.App != "billing" || ev.Subject.RecordID != "inv-42" {
		t.Fatalf("subject = %+v", ev.Subject)
	}
	if ev.State != intake.EventDelivered || completion.calls() != 1 || general.calls() != 0 || otherApp.calls() != 0 {
		t.Fatalf("%s; calls completion %d general %d other app %d", ev.State, completion.calls(), general.calls(), otherApp.calls())
	}
	var env intake.Envelope
	if err := json.Unmarshal(completion.bodies[0], &env); err != nil || env.Subject == nil || env.Subject.RecordID != "inv-42" {
		t.Fatalf("envelope subject = %+v %v", env.Subject, err)
	}

	// An app with no completion consumer: nobody gets it.
	link2 := intake.SubjectLink{ID: intake.NewID(), ConnectionID: e.conn.ID, ProviderObjectID: "cus_9", App: "support",
		RecordID: "t-1", CreatedAt: e.clock.Now()}
	if err := e.store.PutSubjectLink(ctx, intake.Scope{}, link2); err != nil {
		t.Fatal(err)
	}
	id2 := e.event(t, "stripe.customer.updated", "cus_9")
	e.run(t)
	if ev, _ := e.get(t, id2); ev.State != intake.EventNoConsumer {
		t.Fatalf("state %s, want no_consumer", ev.State)
	}
}

func TestDeliveryCarriesAVerifiableStandardWebhooksSignature(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	_, secret := e.consumer(t, "app", url, false, "*")
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	if rec.calls() != 1 {
		t.Fatal("no delivery")
	}
	r, body := rec.got[0], rec.bodies[0]
	if r.Header.Get("webhook-id") != id || r.Header.Get("webhook-timestamp") != fmt.Sprint(e.clock.Now().Unix()) {
		t.Fatalf("headers %v", r.Header)
	}
	want, _ := delivery.Sign(secret, id, e.clock.Now().Unix(), body)
	if r.Header.Get("webhook-signature") != want {
		t.Fatalf("signature %q, want %q", r.Header.Get("webhook-signature"), want)
	}
	var env map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "type", "kind", "org_id", "connection_id", "provider", "provider_event_id", "message_id",
		"replay", "replay_of", "occurred_at", "received_at", "subject", "data"} {
		if _, ok := env[k]; !ok {
			t.Errorf("envelope lacks %q", k)
		}
	}
	if env["id"] != id || env["type"] != "stripe.invoice.paid" || env["replay"] != false {
		t.Fatalf("envelope %v", env)
	}
}

func TestTwoRoutersRacingDeliverEachEventOncePerConsumer(t *testing.T) {
	e := setup(t)
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("webhook-id")+r.URL.Path]++
		mu.Unlock()
	}))
	defer srv.Close()
	e.consumer(t, "a", srv.URL+"/a", false, "*")
	e.consumer(t, "b", srv.URL+"/b", false, "*")
	var ids []string
	for range 30 {
		ids = append(ids, e.event(t, "stripe.invoice.paid"))
	}
	other := router.New(router.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Batch: 4})
	var wg sync.WaitGroup
	for _, r := range []*router.Router{e.r, other} {
		wg.Go(func() {
			for {
				n, err := r.RunOnce(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		for _, path := range []string{"/a", "/b"} {
			if seen[id+path] != 1 {
				t.Errorf("event %s reached %s %d times", id, path, seen[id+path])
			}
		}
		if ev, ds := e.get(t, id); ev.State != intake.EventDelivered || len(ds) != 2 || ds[0].Attempt != 1 || ds[1].Attempt != 1 {
			t.Errorf("event %s: %s deliveries %+v", id, ev.State, ds)
		}
	}
}

func TestConsumerThatNeverAnswersDoesNotDelayAnotherConsumer(t *testing.T) {
	e := setup(t, func(c *router.Config) { c.Poll = time.Hour })
	stuck := make(chan struct{})
	entered := make(chan struct{}, 10)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-stuck
	}))
	defer slow.Close()
	fast, fastURL := newRecorder(t, 200)
	fast.received = make(chan string, 10)
	e.consumer(t, "slow", slow.URL, false, "stripe.*")
	e.consumer(t, "fast", fastURL, false, "stripe.*", "github.*")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.r.Run(ctx); close(done) }()
	defer func() { close(stuck); cancel(); <-done }()

	both := e.event(t, "stripe.invoice.paid")
	wait := func(what string, ch <-chan string) string {
		t.Helper()
		select {
		case id := <-ch:
			return id
		case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
			t.Fatalf("%s never arrived", what)
			return ""
		}
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("slow consumer never called")
	}
	if got := wait("the shared event at the fast consumer", fast.received); got != both {
		t.Fatalf("fast consumer got %s", got)
	}
	// While the slow consumer still holds the first event, a later event
	// for the fast consumer alone goes straight through.
	only := e.event(t, "github.push")
	if got := wait("the fast consumer's own event", fast.received); got != only {
		t.Fatalf("fast consumer got %s", got)
	}
}

func TestTruncatedEventCarriesAFreshBodyURLToTheWholeRawBody(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	e.consumer(t, "app", url, false, "*")
	e.truncate = true
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	var env intake.Envelope
	if err := json.Unmarshal(rec.bodies[0], &env); err != nil {
		t.Fatal(err)
	}
	signer := bodyurl.Signer{Key: []byte("body-url-key")}
	prefix := "https://intake.example.com/body/"
	if !env.DataTruncated || len(env.BodyURL) <= len(prefix) || env.BodyURL[:len(prefix)] != prefix {
		t.Fatalf("envelope truncated=%v body_url=%q", env.DataTruncated, env.BodyURL)
	}
	ev, _ := e.get(t, id)
	if got, ok := signer.Open(env.BodyURL[len(prefix):], e.clock.Now()); !ok || got != ev.MessageID {
		t.Fatalf("body_url opens to %q %v, want message %s", got, ok, ev.MessageID)
	}
	if _, ok := signer.Open(env.BodyURL[len(prefix):], e.clock.Now().Add(bodyurl.TTL)); ok {
		t.Fatal("body_url still works after its TTL")
	}
}
