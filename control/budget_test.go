package control_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/seal"
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
	sealer, _ := seal.New(bytes.Repeat([]byte{5}, 32))
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
		<-held.entered
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
