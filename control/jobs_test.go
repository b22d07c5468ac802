package control_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// tenant adds an org with a GitHub connection (the env's secret) and an
// endpoint, and returns the endpoint.
func (e *env) tenant(t *testing.T, name string) intake.Endpoint {
	t.Helper()
	ctx := context.Background()
	org := intake.Org{ID: intake.NewID(), Name: name, CreatedAt: e.clock.Now()}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "github", Name: "gh", CreatedAt: e.clock.Now()}
	conn.SealedSecrets, _ = e.sealer.SealSecrets([]string{secret}, []byte(conn.ID))
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: []byte(org.ID), Enabled: true,
		MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	for _, err := range []error{e.store.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_" + name, Hash: []byte(org.ID)}),
		e.store.CreateConnection(ctx, conn), e.store.CreateEndpoint(ctx, ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return ep
}

// runJobs steps runner, a second apart, until no job is left to run.
func (e *env) runJobs(t *testing.T, runner *control.ReplayRunner) {
	t.Helper()
	for range 1000 {
		e.clock.Advance(time.Second)
		ran, err := runner.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			return
		}
	}
	t.Fatal("the jobs never ended")
}

// replaysOf counts the replays of each original message in sc.
func (e *env) replaysOf(t *testing.T, sc intake.Scope) map[string]int {
	t.Helper()
	page, err := e.store.ListMessages(context.Background(), sc, intake.MessageFilter{Limit: intake.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, m := range page.Items {
		if m.ReplayOf != "" {
			per[m.ReplayOf]++
		}
	}
	return per
}

func TestABulkActionPastTheBulkMaximumRunsAsAJobOnlyWhenConfirmed(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const n = 7
	for i := range n {
		e.receive(t, fmt.Sprintf("d-%d", i))
	}
	e.settle(t) // no consumer: seven no_consumer events
	op := as(intake.Scope{OrgID: e.org.ID})
	small := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, BulkMax: 3})

	_, err := small.RerouteWhere(ctx, op, intake.EventFilter{}, false)
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), "more than 3 events") ||
		!strings.Contains(intake.ErrorMessage(err), "confirm") {
		t.Fatalf("a re-route of 7 past a maximum of 3: %v, want EINVALID naming the maximum and confirm", err)
	}
	replays := intake.MessageFilter{Type: "github.issues.opened"}
	_, err = small.ReplayWhere(ctx, op, replays, false)
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), "selects 7 messages") ||
		!strings.Contains(intake.ErrorMessage(err), "confirm") {
		t.Fatalf("a replay of 7 past a maximum of 3: %v, want EINVALID naming the count and confirm", err)
	}
	if page, _ := e.store.ListEvents(ctx, intake.Scope{}, intake.EventFilter{State: intake.EventNoConsumer}); len(page.Items) != n {
		t.Fatalf("after the refusals %d no_consumer events, want all %d untouched", len(page.Items), n)
	}
	if per := e.replaysOf(t, intake.Scope{}); len(per) != 0 {
		t.Fatalf("after the refusals %d messages replayed", len(per))
	}

	reroute, err := small.RerouteWhere(ctx, op, intake.EventFilter{}, true)
	if err != nil || reroute.Job == nil || reroute.Job.Kind != intake.JobReroute || reroute.Job.Total != n || reroute.Job.State() != "running" {
		t.Fatalf("a confirmed re-route of 7: %+v, %v; want a running job of 7", reroute, err)
	}
	replay, err := small.ReplayWhere(ctx, op, replays, true)
	if err != nil || replay.Job == nil || replay.Job.Kind != intake.JobReplay || replay.Job.Total != n {
		t.Fatalf("a confirmed replay of 7: %+v, %v; want a job of 7", replay, err)
	}
	runner := small.Runner(nil)
	runner.Batch = 2
	e.runJobs(t, runner)

	for _, j := range []*intake.ReplayJob{reroute.Job, replay.Job} {
		p, err := small.ReplayJob(ctx, op, j.ID)
		if err != nil || p.State() != "done" || p.Done != n {
			t.Fatalf("%s job ended as %+v, %v; want done with %d", j.Kind, p, err, n)
		}
	}
	if page, _ := e.store.ListEvents(ctx, intake.Scope{}, intake.EventFilter{State: intake.EventPending}); len(page.Items) != n {
		t.Fatalf("%d events pending after the re-route job, want %d", len(page.Items), n)
	}
	per := e.replaysOf(t, intake.Scope{})
	if len(per) != n {
		t.Fatalf("%d originals replayed, want %d", len(per), n)
	}
	for id, k := range per {
		if k != 1 {
			t.Errorf("original %s replayed %d times", id, k)
		}
	}
}

// listedEvents records the event lists a store is asked for.
type listedEvents struct {
	intake.Store
	limits []int
	counts int
}

func (s *listedEvents) ListEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (intake.Page[intake.Event], error) {
	s.limits = append(s.limits, f.Limit)
	return s.Store.ListEvents(ctx, sc, f)
}

func (s *listedEvents) CountEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (int, error) {
	s.counts++
	return s.Store.CountEvents(ctx, sc, f)
}

// A confirmed re-route past the bulk maximum is counted, a count in each
// state, and lists only its preview's first events: it never pages
// through what it selects, however many.
func TestAConfirmedRerouteCountsWhatItSelectsWithoutPagingIt(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const n = 7
	for i := range n {
		e.receive(t, fmt.Sprintf("d-%d", i))
	}
	e.settle(t)
	listed := &listedEvents{Store: e.store}
	small := control.New(control.Config{Store: listed, Sealer: e.sealer, Clock: e.clock, BulkMax: 3})
	op := as(intake.Scope{OrgID: e.org.ID})
	res, err := small.RerouteWhere(ctx, op, intake.EventFilter{}, true)
	if err != nil || res.Job == nil || res.Job.Total != n {
		t.Fatalf("a confirmed re-route of %d: %+v, %v; want a job of %d", n, res, err, n)
	}
	preview, err := small.PreviewRerouteWhere(ctx, op, intake.EventFilter{})
	if err != nil || preview.Count != n || len(preview.Items) != n {
		t.Fatalf("preview: %d counted, %d shown, %v; want %d of each", preview.Count, len(preview.Items), err, n)
	}
	if listed.counts == 0 {
		t.Fatal("the events were not counted")
	}
	for _, limit := range listed.limits {
		if limit > control.PreviewItems {
			t.Fatalf("events listed a page of %d (lists: %v): a count pages through what it selects", limit, listed.limits)
		}
	}
}

// stallBatch holds its runner inside the write of the job's second batch
// until release is closed: the runner's process stalls there.
type stallBatch struct {
	intake.Store
	calls   int
	entered chan struct{}
	release chan struct{}
}

func (s *stallBatch) SaveJobBatch(ctx context.Context, j intake.ReplayJob, b intake.JobBatch, now time.Time, lease time.Duration) (int, error) {
	if s.calls++; s.calls == 2 {
		close(s.entered)
		<-s.release
	}
	return s.Store.SaveJobBatch(ctx, j, b, now, lease)
}

func TestABulkJobWhoseRunnerStallsIsTakenOverAfterItsLeaseAndNoRowIsDoneTwice(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const n = 7
	for i := range n {
		e.receive(t, fmt.Sprintf("d-%d", i))
	}
	op := as(intake.Scope{OrgID: e.org.ID})
	small := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, BulkMax: 3})
	res, err := small.ReplayWhere(ctx, op, intake.MessageFilter{EndpointID: e.ep.ID}, true)
	if err != nil || res.Job == nil {
		t.Fatalf("confirmed replay: %+v, %v", res, err)
	}

	// The first runner writes its first batch, then stalls in its second.
	stalled := &stallBatch{Store: e.store, entered: make(chan struct{}), release: make(chan struct{})}
	first := &control.ReplayRunner{Store: stalled, Clock: e.clock, Batch: 2}
	done := make(chan error, 1)
	go func() {
		_, err := first.RunOnce(ctx)
		done <- err
	}()
	select {
	case <-stalled.entered:
	case err := <-done:
		t.Fatalf("the first runner ended before its second batch: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the first runner never reached its second batch")
	}
	second := &control.ReplayRunner{Store: e.store, Clock: e.clock, Batch: 2}
	if ran, err := second.RunOnce(ctx); ran || err != nil {
		t.Fatalf("a job was taken over while its lease held: ran %v, %v", ran, err)
	}
	// Its lease ends: the second runner takes the job over from the first
	// batch's cursor and finishes it.
	e.clock.Advance(time.Minute)
	e.runJobs(t, second)
	// The first runner wakes and writes nothing: the job is no longer its.
	close(stalled.release)
	if err := <-done; err != nil {
		t.Fatalf("the stalled runner: %v", err)
	}
	p, err := small.ReplayJob(ctx, op, res.Job.ID)
	if err != nil || p.State() != "done" || p.Done != n {
		t.Fatalf("job after the takeover: %+v, %v; want done with %d", p, err, n)
	}
	per := e.replaysOf(t, intake.Scope{})
	if len(per) != n {
		t.Fatalf("%d originals replayed, want %d", len(per), n)
	}
	for id, k := range per {
		if k != 1 {
			t.Errorf("original %s replayed %d times", id, k)
		}
	}
}

func TestOneOrgsBulkJobDoesNotHoldUpAnothers(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	other := e.tenant(t, "globex")
	for i := range 6 {
		e.receive(t, fmt.Sprintf("a-%d", i))
	}
	for i := range 2 {
		e.receiveAt(t, other, fmt.Sprintf("b-%d", i))
	}
	small := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, BulkMax: 1})
	acme, globex := as(intake.Scope{OrgID: e.org.ID}), as(intake.Scope{OrgID: other.OrgID})
	long, err := small.ReplayWhere(ctx, acme, intake.MessageFilter{EndpointID: e.ep.ID}, true)
	if err != nil || long.Job == nil {
		t.Fatalf("acme's job: %+v, %v", long, err)
	}
	// A second job of acme's earns it no second turn before globex's.
	e.clock.Advance(time.Second)
	if more, err := small.ReplayWhere(ctx, acme, intake.MessageFilter{EndpointID: e.ep.ID}, true); err != nil || more.Job == nil {
		t.Fatalf("acme's second job: %+v, %v", more, err)
	}
	e.clock.Advance(time.Second)
	short, err := small.ReplayWhere(ctx, globex, intake.MessageFilter{EndpointID: other.ID}, true)
	if err != nil || short.Job == nil {
		t.Fatalf("globex's job: %+v, %v", short, err)
	}
	// One runner, a batch a turn: acme's job, made first, takes its turn,
	// then globex's, not acme's batches or its second job first.
	runner := small.Runner(nil)
	runner.Batch, runner.Batches = 2, 1
	for range 2 {
		e.clock.Advance(time.Second)
		if ran, err := runner.RunOnce(ctx); !ran || err != nil {
			t.Fatalf("runner: ran %v, %v", ran, err)
		}
	}
	b, _ := small.ReplayJob(ctx, globex, short.Job.ID)
	a, _ := small.ReplayJob(ctx, acme, long.Job.ID)
	if b.State() != "done" || b.Done != 2 || a.Finished() || a.Done != 2 {
		t.Fatalf("after two turns globex's job is %s (%d/%d) and acme's %s (%d/%d); want globex's done while acme's runs",
			b.State(), b.Done, b.Total, a.State(), a.Done, a.Total)
	}
	e.runJobs(t, runner)
	if a, _ := small.ReplayJob(ctx, acme, long.Job.ID); a.State() != "done" || a.Done != 6 {
		t.Fatalf("acme's job ended as %+v", a)
	}
}
