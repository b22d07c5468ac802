package control_test

import (
	"context"
	"crypto/hmac"
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

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/router"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

const secret = "gh-secret"

// env is a whole pipeline on one store: a GitHub connection, a worker, a
// router and the operator actions, stepped by hand on an injected clock.
type env struct {
	store  *sqlite.Store
	sealer *seal.Sealer
	clock  *testkit.Clock
	org    intake.Org
	conn   intake.Connection
	ep     intake.Endpoint
	w      *worker.Worker
	r      *router.Router
	ctl    *control.Plane
	runner *control.ReplayRunner
}

// as acts in sc, as the audit log's actor "test".
func as(sc intake.Scope) control.Caller {
	return control.Caller{Scope: sc, Actor: "test", Role: intake.RoleAdmin}
}

func setup(t *testing.T) *env {
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
	e.conn = intake.Connection{ID: intake.NewID(), OrgID: e.org.ID, Provider: "github", Name: "gh", CreatedAt: e.clock.Now()}
	e.conn.SealedSecrets, _ = sealer.SealSecrets([]string{secret}, []byte(e.conn.ID))
	e.ep = intake.Endpoint{ID: intake.NewID(), OrgID: e.org.ID, ConnectionID: e.conn.ID, TokenHash: []byte(e.org.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	for _, err := range []error{s.CreateOrg(ctx, e.org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(e.org.ID)}), s.CreateConnection(ctx, e.conn), s.CreateEndpoint(ctx, e.ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	e.w = worker.New(worker.Config{Store: s, Sealer: sealer, Clock: e.clock, Backoff: intake.Backoff{Base: time.Second}})
	e.r = router.New(router.Config{Store: s, Sealer: sealer, Clock: e.clock, Backoff: intake.Backoff{Base: time.Second}})
	e.ctl = control.New(control.Config{Store: s, Sealer: sealer, Clock: e.clock})
	e.runner = &control.ReplayRunner{Store: s, Clock: e.clock}
	return e
}

// receive stores a signed GitHub delivery as ingress would.
func (e *env) receive(t *testing.T, delivery string) string {
	t.Helper()
	return e.receiveAt(t, e.ep, delivery)
}

// receiveAt stores a signed GitHub delivery to ep, of a connection sealed
// with the env's secret, as ingress would.
func (e *env) receiveAt(t *testing.T, ep intake.Endpoint, delivery string) string {
	t.Helper()
	body := fmt.Appendf(nil, `{"action":"opened","issue":{"node_id":"I_%s"}}`, delivery)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sum := sha256.Sum256(body)
	m := &intake.Message{ID: intake.NewID(), OrgID: ep.OrgID, ConnectionID: ep.ConnectionID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{"X-Github-Event": {"issues"}, "X-Github-Delivery": {delivery},
			"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(mac.Sum(nil))}},
		Body: body, Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
		MaxAttempts: 6, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// settle runs workers and routers until nothing is due.
func (e *env) settle(t *testing.T) {
	t.Helper()
	for {
		n, err := e.w.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		k, err := e.r.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n+k == 0 {
			return
		}
	}
}

type consumer struct {
	mu     sync.Mutex
	status int
	got    []intake.Envelope
}

func (e *env) consumer(t *testing.T, types ...string) *consumer {
	t.Helper()
	c := &consumer{status: 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var env intake.Envelope
		json.Unmarshal(b, &env)
		c.mu.Lock()
		c.got = append(c.got, env)
		status := c.status
		c.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	cons := intake.Consumer{ID: intake.NewID(), OrgID: e.org.ID, Name: "app", App: "app", URL: srv.URL, EventTypes: types,
		Enabled: true, CreatedAt: e.clock.Now()}
	cons.SealedSecret = e.sealer.Seal([]byte(delivery.NewSecret()), []byte(cons.ID))
	if err := e.store.CreateConsumer(context.Background(), cons); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *consumer) envelopes() []intake.Envelope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]intake.Envelope(nil), c.got...)
}

func TestReplayedMessageReachesTheConsumerAgainMarkedAsAReplay(t *testing.T) {
	e := setup(t)
	c := e.consumer(t, "github.*")
	orig := e.receive(t, "d-1")
	e.settle(t)
	// Days later, past the provider's timestamp tolerances: still verifies.
	e.clock.Advance(72 * time.Hour)
	r, err := e.ctl.ReplayMessage(context.Background(), as(intake.Scope{OrgID: e.org.ID}), orig)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == orig || r.ReplayOf != orig {
		t.Fatalf("replay = %+v", r)
	}
	e.settle(t)
	got := c.envelopes()
	if len(got) != 2 {
		t.Fatalf("consumer got %d deliveries, want the original and the replay", len(got))
	}
	first, again := got[0], got[1]
	if first.Replay || !again.Replay || again.ReplayOf == nil || *again.ReplayOf != first.ID || again.ID == first.ID ||
		again.ProviderEventID != first.ProviderEventID {
		t.Fatalf("original %+v\nreplay %+v", first, again)
	}
	m, _ := e.store.Message(context.Background(), intake.Scope{}, r.ID)
	if m.State != intake.MessageProcessed || m.ReplayOf != orig {
		t.Fatalf("replay message %+v", m)
	}
	// A replay of the replay still points at what the provider sent.
	rr, err := e.ctl.ReplayMessage(context.Background(), as(intake.Scope{}), r.ID)
	if err != nil || rr.ReplayOf != orig {
		t.Fatalf("replay of replay = %+v %v", rr, err)
	}
}

func TestReplayOfAnExpiredBodyIsADeadRecord(t *testing.T) {
	e := setup(t)
	orig := e.receive(t, "d-1")
	e.settle(t)
	e.clock.Advance(8 * 24 * time.Hour)
	if n, err := e.store.DropBodies(context.Background(), e.clock.Now(), 7*24*time.Hour, 100); err != nil || n != 1 {
		t.Fatalf("dropped %d bodies, %v", n, err)
	}
	r, err := e.ctl.ReplayMessage(context.Background(), as(intake.Scope{}), orig)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := e.store.Message(context.Background(), intake.Scope{}, r.ID)
	if m.State != intake.MessageDead || m.ErrorCode != intake.ErrCodeBodyExpired || !m.BodyExpired {
		t.Fatalf("replay record = %+v", m)
	}
	if n, _ := e.w.RunOnce(context.Background()); n != 0 {
		t.Fatal("a dead replay record was claimed")
	}
}

func TestReplayWindowIsBoundedToSevenDaysAndReplaysOriginalsOnly(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	start := e.clock.Now()
	for i := range 5 {
		e.receive(t, fmt.Sprintf("d-%d", i))
		e.clock.Advance(time.Hour)
	}
	e.settle(t)
	_, err := e.ctl.ReplayWindow(ctx, as(intake.Scope{}), e.ep.ID, start, start.Add(8*24*time.Hour))
	if intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("8-day window: %v", err)
	}
	job, err := e.ctl.ReplayWindow(ctx, as(intake.Scope{OrgID: e.org.ID}), e.ep.ID, start.Add(time.Hour), start.Add(4*time.Hour))
	if err != nil || job.Total != 3 {
		t.Fatalf("job %+v %v", job, err)
	}
	if ran, err := e.runner.RunOnce(ctx); !ran || err != nil {
		t.Fatalf("runner: ran %v, %v", ran, err)
	}
	if p, err := e.ctl.ReplayJob(ctx, as(intake.Scope{OrgID: e.org.ID}), job.ID); err != nil || p.Done != 3 || p.Error != "" || !p.Finished() {
		t.Fatalf("progress %+v %v", p, err)
	}
	replays, _ := e.store.CountMessages(ctx, intake.Scope{}, intake.MessageFilter{})
	if replays != 8 {
		t.Fatalf("%d messages, want 5 originals and 3 replays", replays)
	}
	// A second window over the same span replays originals, not replays.
	job2, err := e.ctl.ReplayWindow(ctx, as(intake.Scope{}), e.ep.ID, start, start.Add(7*24*time.Hour))
	if err != nil || job2.Total != 5 {
		t.Fatalf("job2 %+v %v", job2, err)
	}
}

func TestRerouteOfNoConsumerEventDeliversToALaterConsumer(t *testing.T) {
	e := setup(t)
	e.receive(t, "d-1")
	e.settle(t)
	page, _ := e.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{State: intake.EventNoConsumer})
	if len(page.Items) != 1 {
		t.Fatalf("%d no_consumer events", len(page.Items))
	}
	c := e.consumer(t, "github.issues.*")
	e.settle(t)
	if len(c.envelopes()) != 0 {
		t.Fatal("a new consumer re-routed an old event by itself")
	}
	if err := e.ctl.Reroute(context.Background(), as(intake.Scope{OrgID: e.org.ID}), page.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if got := c.envelopes(); len(got) != 1 || got[0].ID != page.Items[0].ID {
		t.Fatalf("after re-route the consumer got %+v", got)
	}
	err := e.ctl.Reroute(context.Background(), as(intake.Scope{}), page.Items[0].ID)
	if intake.ErrorCode(err) != intake.ECONFLICT {
		t.Fatalf("re-route of a delivered event: %v", err)
	}
}

func TestRerouteOfDeadEventSkipsTheConsumerThatHandledIt(t *testing.T) {
	e := setup(t)
	good := e.consumer(t, "github.*")
	bad := e.consumer(t, "github.*")
	bad.status = 500
	e.receive(t, "d-1")
	for range 8 {
		e.settle(t)
		e.clock.Advance(time.Hour)
	}
	page, _ := e.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{})
	ev := page.Items[0]
	if ev.State != intake.EventDead || len(good.envelopes()) != 1 || len(bad.envelopes()) != 6 {
		t.Fatalf("event %s; calls good %d bad %d", ev.State, len(good.envelopes()), len(bad.envelopes()))
	}
	bad.mu.Lock()
	bad.status = 200
	bad.mu.Unlock()
	res, err := e.ctl.RerouteWhere(context.Background(), as(intake.Scope{OrgID: e.org.ID}), intake.EventFilter{Type: "github.issues.opened"}, false)
	if err != nil || res.Count != 1 {
		t.Fatalf("bulk re-route %+v %v", res, err)
	}
	e.settle(t)
	ev, _ = e.store.Event(context.Background(), intake.Scope{}, ev.ID)
	if ev.State != intake.EventDelivered || len(good.envelopes()) != 1 || len(bad.envelopes()) != 7 {
		t.Fatalf("event %s; calls good %d bad %d", ev.State, len(good.envelopes()), len(bad.envelopes()))
	}
}

// A window replay whose runner stopped is taken over once its lease ends
// and goes on from the last batch it saved: every original is replayed,
// none of the saved batch twice.
func TestStoppedWindowReplayIsTakenOverWhereItStopped(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	start := e.clock.Now()
	const n = 120 // more than two batches
	for i := range n {
		e.receive(t, fmt.Sprintf("d-%d", i))
	}
	e.settle(t)
	job, err := e.ctl.ReplayWindow(ctx, as(intake.Scope{}), e.ep.ID, start, start.Add(time.Hour))
	if err != nil || job.Total != n {
		t.Fatalf("job %+v %v", job, err)
	}
	// A runner replays the first batch and its process ends mid-job: its
	// context is cancelled once the first batch is saved.
	stopped, cancel := context.WithCancel(ctx)
	first := &control.ReplayRunner{Store: stopAfterSave{Store: e.store, cancel: cancel}, Clock: e.clock}
	if ran, err := first.RunOnce(stopped); !ran || err != nil {
		t.Fatalf("first runner: ran %v, %v", ran, err)
	}
	p, _ := e.ctl.ReplayJob(ctx, as(intake.Scope{}), job.ID)
	if p.Finished() || p.Done == 0 || p.Done >= n {
		t.Fatalf("after the first runner stopped: %+v", p)
	}
	// Nobody takes it while the lease holds; once it ends, another runner
	// finishes the job.
	if ran, _ := e.runner.RunOnce(ctx); ran {
		t.Fatal("a leased replay was taken over")
	}
	e.clock.Advance(time.Minute)
	if ran, err := e.runner.RunOnce(ctx); !ran || err != nil {
		t.Fatalf("second runner: ran %v, %v", ran, err)
	}
	if p, _ := e.ctl.ReplayJob(ctx, as(intake.Scope{}), job.ID); !p.Finished() || p.Done != n || p.Error != "" {
		t.Fatalf("after the takeover: %+v", p)
	}
	replays, _ := e.store.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{Limit: 1000})
	per := map[string]int{}
	for _, m := range replays.Items {
		if m.ReplayOf != "" {
			per[m.ReplayOf]++
		}
	}
	if len(per) != n {
		t.Fatalf("%d originals replayed, want %d", len(per), n)
	}
	for id, k := range per {
		if k != 1 {
			t.Errorf("original %s replayed %d times", id, k)
		}
	}
}

// stopAfterSave ends its runner's context once the runner has saved a
// replay's progress: the process running the replay stops there.
type stopAfterSave struct {
	intake.Store
	cancel context.CancelFunc
}

func (s stopAfterSave) SaveJobBatch(ctx context.Context, j intake.ReplayJob, b intake.JobBatch, now time.Time, lease time.Duration) (int, error) {
	defer s.cancel()
	return s.Store.SaveJobBatch(ctx, j, b, now, lease)
}

// A runner stopped in the middle of a batch leaves the job unfinished and
// without an error, for another runner to take over, and none of the
// batch written.
func TestWindowReplayStoppedMidBatchIsNotFailed(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	start := e.clock.Now()
	for i := range 10 {
		e.receive(t, fmt.Sprintf("d-%d", i))
	}
	e.settle(t)
	job, err := e.ctl.ReplayWindow(ctx, as(intake.Scope{}), e.ep.ID, start, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	stopping, cancel := context.WithCancel(ctx)
	runner := &control.ReplayRunner{Store: &stopOnRead{Store: e.store, left: 5, cancel: cancel}, Clock: e.clock}
	if ran, err := runner.RunOnce(stopping); !ran || err != nil {
		t.Fatalf("runner: ran %v, %v", ran, err)
	}
	if p, _ := e.ctl.ReplayJob(ctx, as(intake.Scope{}), job.ID); p.Finished() || p.Error != "" {
		t.Fatalf("a replay stopped mid-batch reads as %+v", p)
	}
	e.clock.Advance(time.Minute)
	if ran, err := e.runner.RunOnce(ctx); !ran || err != nil {
		t.Fatalf("second runner: ran %v, %v", ran, err)
	}
	if p, _ := e.ctl.ReplayJob(ctx, as(intake.Scope{}), job.ID); !p.Finished() || p.Done != 10 || p.Error != "" {
		t.Fatalf("after the takeover: %+v", p)
	}
	// A batch is written whole with the job's progress, or not at all:
	// what the stopped runner had read is not replayed twice.
	per := e.replaysOf(t, intake.Scope{})
	if len(per) != 10 {
		t.Fatalf("%d originals replayed, want 10", len(per))
	}
	for id, k := range per {
		if k != 1 {
			t.Errorf("original %s replayed %d times", id, k)
		}
	}
}

// stopOnRead lets left reads of a body through, then stops its runner's
// process: the runner stops in the middle of reading a batch.
type stopOnRead struct {
	intake.Store
	left   int
	cancel context.CancelFunc
}

func (s *stopOnRead) MessageBody(ctx context.Context, sc intake.Scope, id string) (intake.StoredBody, error) {
	if s.left == 0 {
		s.cancel()
		return intake.StoredBody{}, ctx.Err()
	}
	s.left--
	return s.Store.MessageBody(ctx, sc, id)
}
