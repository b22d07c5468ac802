package control_test

import (
	"context"
	"fmt"
	"github.com/intakehq/intake/delivery"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
)

// heldReads is a store whose event lists wait, for the orgs named in hold,
// until the test lets them go or their context ends; the others list
// nothing at once.
type heldReads struct {
	intake.Store
	hold    map[string]bool
	entered chan string
	release chan struct{}
	marked  chan bool // whether each held read came marked as an operator's
}

func (s *heldReads) ListEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (intake.Page[intake.Event], error) {
	if s.hold[sc.OrgID] {
		s.marked <- intake.IsOperatorRead(ctx)
		s.entered <- sc.OrgID
		select {
		case <-s.release:
		case <-ctx.Done():
			return intake.Page[intake.Event]{}, ctx.Err()
		}
	}
	return intake.Page[intake.Event]{}, nil
}

func budgetPlane(t *testing.T, s intake.Store, reads control.ReadBudget) (*control.Plane, control.Caller, control.Caller) {
	t.Helper()
	sealer := testkit.Sealer(t)
	ctl := control.New(control.Config{Store: s, Sealer: sealer, Reads: reads})
	staff := control.Caller{Actor: "staff"}
	var keys []control.Caller
	for _, name := range []string{"alpha", "beta"} {
		org, _, err := ctl.CreateOrg(context.Background(), staff, name)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_" + name, Role: intake.RoleViewer})
	}
	return ctl, keys[0], keys[1]
}

// TestAViewersReadsPastItsOrgsBudgetAreRefusedWithRetryAfterWhileAnotherOrgReads:
// one org's viewer key holding its reads at once is refused past them (429
// with Retry-After), and another org's read is served meanwhile.
func TestAViewersReadsPastItsOrgsBudgetAreRefusedWithRetryAfterWhileAnotherOrgReads(t *testing.T) {
	ctx := context.Background()
	held := &heldReads{Store: testkit.SQLite(t), hold: map[string]bool{}, entered: make(chan string, 4),
		release: make(chan struct{}), marked: make(chan bool, 4)}
	ctl, a, b := budgetPlane(t, held, control.ReadBudget{PerOrg: 2, Total: 4, Wait: 10 * time.Millisecond})
	held.hold[b.Scope.OrgID] = true

	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := ctl.Events(ctx, b, intake.EventFilter{})
			done <- err
		}()
	}
	for range 2 {
		select {
		case <-held.entered:
		case err := <-done:
			t.Fatalf("a read of the org returned before it reached the store: %v", err)
		}
		if !<-held.marked {
			t.Fatal("a held read reached the store unmarked: it would run on the pipeline's connections")
		}
	}

	_, err := ctl.Events(ctx, b, intake.EventFilter{})
	if intake.ErrorCode(err) != intake.EBUSY || control.HTTPStatus(err) != http.StatusTooManyRequests {
		t.Fatalf("a third read of the org holding two: %v, want EBUSY (429)", err)
	}
	if got := control.RetryAfter(err); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	if _, err := ctl.Events(ctx, a, intake.EventFilter{}); err != nil {
		t.Fatalf("another org's read while the first holds its budget: %v", err)
	}
	close(held.release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctl.Events(ctx, b, intake.EventFilter{}); err != nil {
		t.Fatalf("the org's read once its reads ended: %v", err)
	}
}

// TestAReadPastItsDeadlineIsStoppedNamingTheDeadlineAndHoldsNothing: a read
// that runs past the deadline is stopped with 503 naming the deadline, and
// the budget it held is given back.
func TestAReadPastItsDeadlineIsStoppedNamingTheDeadlineAndHoldsNothing(t *testing.T) {
	ctx := context.Background()
	held := &heldReads{Store: testkit.SQLite(t), hold: map[string]bool{}, entered: make(chan string, 4),
		release: make(chan struct{}), marked: make(chan bool, 4)}
	ctl, _, b := budgetPlane(t, held, control.ReadBudget{PerOrg: 1, Total: 4, Deadline: 20 * time.Millisecond})
	held.hold[b.Scope.OrgID] = true
	_, err := ctl.Events(ctx, b, intake.EventFilter{})
	if intake.ErrorCode(err) != intake.EUNAVAILABLE || !strings.Contains(intake.ErrorMessage(err), "20ms deadline") {
		t.Fatalf("a read past its deadline: %v, want EUNAVAILABLE naming the 20ms deadline", err)
	}
	<-held.entered
	<-held.marked
	held.hold[b.Scope.OrgID] = false
	if _, err := ctl.Events(ctx, b, intake.EventFilter{}); err != nil {
		t.Fatalf("the org's next read (its one slot should be free again): %v", err)
	}
}

// consumerAt registers a consumer of e's org delivering to url.
func (e *env) consumerAt(t *testing.T, url string) string {
	t.Helper()
	cons := intake.Consumer{ID: intake.NewID(), OrgID: e.org.ID, Name: "app", App: "app", URL: url, Enabled: true, CreatedAt: e.clock.Now()}
	cons.SealedSecret = e.sealer.Seal([]byte(delivery.NewSecret()), []byte(cons.ID))
	if err := e.store.CreateConsumer(context.Background(), cons); err != nil {
		t.Fatal(err)
	}
	return cons.ID
}

// TestConsumerTestsToAHangingTargetAreBoundedPerOrgAtOnceAndASecond: an
// operator firing consumer tests at a destination that never answers holds
// at most its org's few calls; the next is refused with 429 and
// Retry-After, and a burst past the org's rate is refused too.
func TestConsumerTestsToAHangingTargetAreBoundedPerOrgAtOnceAndASecond(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	op := as(intake.Scope{OrgID: e.org.ID})
	hanging, arrived, release := hangingTests(t, e, op, 4)
	_, err := e.ctl.TestConsumer(ctx, op, hanging)
	if intake.ErrorCode(err) != intake.EBUSY || control.HTTPStatus(err) != http.StatusTooManyRequests || control.RetryAfter(err) != "1" {
		t.Fatalf("a fifth test while four hang: %v, want EBUSY (429) retrying after 1s", err)
	}
	if len(arrived) != 0 {
		t.Fatal("the refused test reached the destination")
	}
	release()

	// The rate: the org's burst is spent (five above), the clock stands
	// still, so fifteen more pass and the next is refused.
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer fine.Close()
	quick := e.consumerAt(t, fine.URL)
	for i := range 15 {
		if _, err := e.ctl.TestConsumer(ctx, op, quick); err != nil {
			t.Fatalf("test %d within the burst: %v", i, err)
		}
	}
	_, err = e.ctl.TestConsumer(ctx, op, quick)
	if intake.ErrorCode(err) != intake.EBUSY || !strings.Contains(intake.ErrorMessage(err), "consumer tests") {
		t.Fatalf("a test past the org's burst: %v, want EBUSY naming consumer tests", err)
	}
	e.clock.Advance(time.Second)
	if _, err := e.ctl.TestConsumer(ctx, op, quick); err != nil {
		t.Fatalf("a test a second later: %v", err)
	}
}

// TestABulkRerouteSelectingMoreThanTheBulkMaximumIsRefusedAndReroutesNothing.
func TestABulkRerouteSelectingMoreThanTheBulkMaximumIsRefusedAndReroutesNothing(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	for i := range 3 {
		e.receive(t, fmt.Sprintf("d-%d", i))
	}
	e.settle(t) // no consumer: three no_consumer events
	e.consumerAt(t, "http://127.0.0.1:1/")
	op := as(intake.Scope{OrgID: e.org.ID})

	small := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, BulkMax: 2})
	_, err := small.RerouteWhere(ctx, op, intake.EventFilter{}, false)
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), "more than 2 events") ||
		!strings.Contains(intake.ErrorMessage(err), "confirm") {
		t.Fatalf("a bulk re-route of 3 past a maximum of 2: %v, want EINVALID naming the maximum and confirm", err)
	}
	page, err := e.store.ListEvents(ctx, intake.Scope{}, intake.EventFilter{State: intake.EventNoConsumer})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("after the refusal, %d no_consumer events (%v), want all 3 untouched", len(page.Items), err)
	}
	wide := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, BulkMax: 3})
	if res, err := wide.RerouteWhere(ctx, op, intake.EventFilter{}, true); err != nil || res.Count != 3 || res.Job != nil {
		t.Fatalf("a confirmed bulk re-route of 3 within a maximum of 3: %+v, %v; want it done at once", res, err)
	}
}

// bodies is a store holding one raw body per message id, of the org
// named beside it.
type bodies struct {
	intake.Store
	org map[string]string
}

func (s *bodies) Message(ctx context.Context, sc intake.Scope, id string) (intake.Message, error) {
	if sc.OrgID != "" && sc.OrgID != s.org[id] {
		return intake.Message{}, intake.Errorf(intake.ENOTFOUND, "message %s not found", id)
	}
	return intake.Message{ID: id, OrgID: s.org[id]}, nil
}

func (s *bodies) MessageBody(ctx context.Context, sc intake.Scope, id string) (intake.StoredBody, error) {
	if sc.OrgID != "" && sc.OrgID != s.org[id] {
		return intake.StoredBody{}, intake.Errorf(intake.ENOTFOUND, "message %s not found", id)
	}
	return intake.StoredBody{Body: []byte(`{"id":"` + id + `"}`), Header: http.Header{}}, nil
}

// TestBodyReadsSpendTheirMessagesOrgsBudgetUntilClosed: an org's open body
// streams hold its share of body reads until closed; a signed body address
// (read as staff) spends the budget of the org whose body it reads, so one
// org's downloads hold up no other org's.
func TestBodyReadsSpendTheirMessagesOrgsBudgetUntilClosed(t *testing.T) {
	ctx := context.Background()
	s := &bodies{Store: testkit.SQLite(t), org: map[string]string{}}
	ctl, a, b := budgetPlane(t, s, control.ReadBudget{Wait: 10 * time.Millisecond})
	msgA, msgB := intake.NewID(), intake.NewID()
	s.org[msgA], s.org[msgB] = a.Scope.OrgID, b.Scope.OrgID
	signed := control.Caller{Actor: "signed body address"}

	var open []io.ReadCloser
	for range 2 {
		r, _, _, err := ctl.OpenMessageBody(ctx, a, msgA)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, r)
	}
	for _, who := range []control.Caller{a, signed} {
		_, _, _, err := ctl.OpenMessageBody(ctx, who, msgA)
		if intake.ErrorCode(err) != intake.EBUSY || intake.RetryAfterOf(err) <= 0 {
			t.Fatalf("%s's third body of org a while two are open: %v, want too_many_requests with a Retry-After", who.Actor, err)
		}
	}
	for _, who := range []control.Caller{b, signed} {
		r, _, _, err := ctl.OpenMessageBody(ctx, who, msgB)
		if err != nil {
			t.Fatalf("%s reading org b's body while org a's are open: %v", who.Actor, err)
		}
		if got, _ := io.ReadAll(r); !strings.Contains(string(got), msgB) {
			t.Fatalf("org b's body read as %q", got)
		}
		r.Close()
	}
	open[0].Close()
	open[0].Close() // closing twice gives back one slot
	r, _, _, err := ctl.OpenMessageBody(ctx, signed, msgA)
	if err != nil {
		t.Fatalf("a body of org a once one was closed: %v", err)
	}
	r.Close()
	if _, _, _, err := ctl.OpenMessageBody(ctx, a, msgA); err != nil {
		t.Fatalf("org a's second body: %v", err)
	}
	if _, _, _, err := ctl.OpenMessageBody(ctx, a, msgA); intake.ErrorCode(err) != intake.EBUSY {
		t.Fatalf("org a's third body: %v, want too_many_requests (one close gives back one slot)", err)
	}
}

// hangingTests starts n consumer tests of op's org to a destination that
// never answers, and returns once all n have reached it: the consumer, the
// channel each further call to it arrives on, and what lets them answer
// and checks that each test ended well.
func hangingTests(t *testing.T, e *env, op control.Caller, n int) (consumer string, arrived chan struct{}, release func()) {
	t.Helper()
	arrived = make(chan struct{}, 16)
	hang := make(chan struct{})
	unhang := sync.OnceFunc(func() { close(hang) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-hang
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(unhang) // first: a test that failed still lets the server close
	consumer = e.consumerAt(t, srv.URL)
	done := make(chan error, n)
	for range n {
		go func() {
			_, err := e.ctl.TestConsumer(context.Background(), op, consumer)
			done <- err
		}()
	}
	for range n {
		<-arrived
	}
	return consumer, arrived, func() {
		t.Helper()
		unhang()
		for range n {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The bounds on consumer tests are the operator's (--consumer-tests-per-org):
// with two per org, a third test while two hang is refused.
func TestConsumerTestsPerOrgIsTheOperatorsSetting(t *testing.T) {
	e := setup(t)
	e.ctl = control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Calls: control.CallBounds{TestsPerOrg: 2}})
	op := as(intake.Scope{OrgID: e.org.ID})
	hanging, _, release := hangingTests(t, e, op, 2)
	// Bounded, so a third test let through fails here rather than hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := e.ctl.TestConsumer(ctx, op, hanging); intake.ErrorCode(err) != intake.EBUSY {
		t.Fatalf("a third test while two hang, two allowed: %v, want EBUSY", err)
	}
	release()
}

// countedReads counts the consumer reads a store is asked for, and notes
// whether each key lookup came marked as an operator's read.
type countedReads struct {
	intake.Store
	mu        sync.Mutex
	consumers int
	keyMarked []bool
}

func (s *countedReads) Consumer(ctx context.Context, sc intake.Scope, id string) (intake.Consumer, error) {
	s.mu.Lock()
	s.consumers++
	s.mu.Unlock()
	return s.Store.Consumer(ctx, sc, id)
}

func (s *countedReads) OrgByKeyHash(ctx context.Context, hash []byte) (intake.Org, intake.Role, error) {
	s.mu.Lock()
	s.keyMarked = append(s.keyMarked, intake.IsOperatorRead(ctx))
	s.mu.Unlock()
	return s.Store.OrgByKeyHash(ctx, hash)
}

// TestARefusedConsumerTestReadsNothingAndEveryKeyLookupIsAnOperatorsRead:
// a consumer test past its org's budget is refused before it reads the
// store, so a flood of them costs the store nothing; and the lookup of a
// caller's key, which anyone may ask for with any token, runs as an
// operator's read (on PostgreSQL, never on a connection the pipeline
// waits for).
func TestARefusedConsumerTestReadsNothingAndEveryKeyLookupIsAnOperatorsRead(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	reads := &countedReads{Store: e.store}
	ctl := control.New(control.Config{Store: reads, Sealer: e.sealer, Clock: e.clock})
	op := as(intake.Scope{OrgID: e.org.ID})
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer fine.Close()
	quick := e.consumerAt(t, fine.URL)
	spent := false
	for range 100 {
		if _, err := ctl.TestConsumer(ctx, op, quick); intake.ErrorCode(err) == intake.EBUSY {
			spent = true
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !spent {
		t.Fatal("100 consumer tests at once, none refused: the org's burst was never spent")
	}
	before := reads.consumers
	for range 50 {
		if _, err := ctl.TestConsumer(ctx, op, quick); intake.ErrorCode(err) != intake.EBUSY {
			t.Fatalf("a test past the budget: %v, want EBUSY", err)
		}
	}
	if n := reads.consumers - before; n != 0 {
		t.Fatalf("50 refused consumer tests read the store %d times", n)
	}

	if _, err := ctl.Authenticate(ctx, "192.0.2.1", "ik_nobody_has_this_key"); intake.ErrorCode(err) != intake.EUNAUTHORIZED {
		t.Fatalf("an unknown key: %v, want EUNAUTHORIZED", err)
	}
	if len(reads.keyMarked) == 0 {
		t.Fatal("the key was not looked up")
	}
	for i, marked := range reads.keyMarked {
		if !marked {
			t.Fatalf("key lookup %d was not marked as an operator's read", i)
		}
	}
}
