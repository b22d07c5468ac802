package control_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// heldKeys is a store whose lookups of keys no org has are held until
// release closes, as a flood of made-up keys holds a slow store; it counts
// the lookups and how many were held at once.
type heldKeys struct {
	intake.Store
	release chan struct{}
	held    chan struct{} // one send per lookup held

	mu                sync.Mutex
	lookups           int
	holding, mostHeld int
}

func (s *heldKeys) OrgByKeyHash(ctx context.Context, hash []byte) (intake.Org, intake.Role, error) {
	s.mu.Lock()
	s.lookups++
	s.mu.Unlock()
	o, role, err := s.Store.OrgByKeyHash(ctx, hash)
	if intake.ErrorCode(err) != intake.ENOTFOUND {
		return o, role, err
	}
	s.mu.Lock()
	s.holding++
	s.mostHeld = max(s.mostHeld, s.holding)
	s.mu.Unlock()
	s.held <- struct{}{}
	<-s.release
	s.mu.Lock()
	s.holding--
	s.mu.Unlock()
	return o, role, err
}

func (s *heldKeys) counts() (lookups, mostHeld int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups, s.mostHeld
}

// TestAFloodOfMadeUpKeysHoldsOneLookupAndNoOperator: a caller sending
// made-up keys from one address as fast as it can has one lookup in the
// store at a time, the rest waiting their turn or refused; an operator
// from another address is let in meanwhile, and once its key is found it
// is not looked up again until an operator's change (its revocation) drops
// what was found, which then acts at once.
func TestAFloodOfMadeUpKeysHoldsOneLookupAndNoOperator(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	s := &heldKeys{Store: e.store, release: make(chan struct{}), held: make(chan struct{}, 100)}
	ctl := control.New(control.Config{Store: s, Sealer: e.sealer, Clock: e.clock})
	key, tok, err := ctl.CreateKey(ctx, as(intake.Scope{OrgID: e.org.ID}), e.org.ID, intake.RoleViewer, "ops")
	if err != nil {
		t.Fatal(err)
	}

	const flood = 20
	errs := make(chan error, flood)
	for i := range flood {
		go func() {
			_, err := ctl.Authenticate(ctx, "198.51.100.7", fmt.Sprintf("ik_madeup%03d", i))
			errs <- err
		}()
	}
	<-s.held // the flood's first lookup is in the store, held

	for range 50 {
		who, err := ctl.Authenticate(ctx, "192.0.2.1", tok)
		if err != nil || who.Scope.OrgID != e.org.ID || who.Role != intake.RoleViewer {
			t.Fatalf("the operator during the flood: %+v, %v", who, err)
		}
	}
	close(s.release)
	for range flood {
		if err := <-errs; intake.ErrorCode(err) != intake.EUNAUTHORIZED && intake.ErrorCode(err) != intake.EBUSY {
			t.Fatalf("a made-up key: %v, want EUNAUTHORIZED or, past its address's budget, EBUSY", err)
		}
	}
	lookups, mostHeld := s.counts()
	if mostHeld != 1 {
		t.Fatalf("%d of one address's lookups were in the store at once, want 1", mostHeld)
	}
	if lookups > flood+1 {
		t.Fatalf("%d lookups for %d made-up keys and one real one sent 50 times: the real one was looked up again", lookups, flood)
	}

	if err := ctl.RevokeKey(ctx, as(intake.Scope{OrgID: e.org.ID}), key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Authenticate(ctx, "192.0.2.1", tok); intake.ErrorCode(err) != intake.EUNAUTHORIZED {
		t.Fatalf("the key right after its revocation: %v, want EUNAUTHORIZED", err)
	}
}
