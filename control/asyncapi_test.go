package control_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/catalog"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
)

// TestAsyncAPIDocumentCoversTheCallersTypesOnlyAndAnotherOrgsConnectionIsNotFound:
// the document of an org's connection or of the org holds that scope's
// catalogued types; another org's connection or org is 404 to it, as its
// other reads answer, and staff must name one.
func TestAsyncAPIDocumentCoversTheCallersTypesOnlyAndAnotherOrgsConnectionIsNotFound(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	clock := testkit.NewClock(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	sealer := testkit.Sealer(t)
	ctl := control.New(control.Config{Store: s, Sealer: sealer, Clock: clock})
	staff := control.Caller{Actor: "staff"}
	var events []intake.Event
	tenant := func(name string, types ...string) (intake.Org, intake.Connection, control.Caller) {
		org, _, err := ctl.CreateOrg(ctx, staff, name)
		if err != nil {
			t.Fatal(err)
		}
		conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "github", Name: name + " github", CreatedAt: clock.Now()}
		if err := s.CreateConnection(ctx, conn); err != nil {
			t.Fatal(err)
		}
		for _, typ := range types {
			events = append(events, intake.Event{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, Type: typ,
				Kind: intake.KindEvent, ReceivedAt: clock.Now(), Data: []byte(`{"n":1}`)})
		}
		return org, conn, control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_" + name, Role: intake.RoleViewer}
	}
	acme, acmeConn, acmeKey := tenant("acme", "push", "issues")
	globex, globexConn, globexKey := tenant("globex", "secret.type")
	l := catalog.New(catalog.Config{Store: s, Clock: clock})
	l.Observe(events)
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	titles := func(d control.AsyncAPI) map[string]bool {
		out := map[string]bool{}
		for _, c := range d.Channels {
			out[c.Title] = true
		}
		return out
	}
	for _, c := range []struct {
		name           string
		who            control.Caller
		org, conn      string
		want           []string
		code, notTitle string
	}{
		{name: "an org's key, its connection", who: acmeKey, conn: acmeConn.ID, want: []string{"push", "issues"}},
		{name: "an org's key, its org", who: acmeKey, want: []string{"push", "issues"}},
		{name: "an org's key naming its org", who: acmeKey, org: acme.ID, want: []string{"push", "issues"}},
		{name: "staff, a connection", who: staff, conn: globexConn.ID, want: []string{"secret.type"}},
		{name: "staff, an org", who: staff, org: globex.ID, want: []string{"secret.type"}},
		{name: "another org's connection", who: acmeKey, conn: globexConn.ID, code: intake.ENOTFOUND},
		{name: "another org", who: globexKey, org: acme.ID, code: intake.ENOTFOUND},
		{name: "another org's connection within its own org", who: globexKey, org: globex.ID, conn: acmeConn.ID, code: intake.ENOTFOUND},
		{name: "an org that is not", who: staff, org: intake.NewID(), code: intake.ENOTFOUND},
		{name: "staff naming nothing", who: staff, code: intake.EINVALID},
		{name: "a bad connection id", who: acmeKey, conn: "nope", code: intake.EINVALID},
		{name: "a bad org id", who: acmeKey, org: "nope", code: intake.EINVALID},
	} {
		doc, err := ctl.AsyncAPIDocument(ctx, c.who, c.org, c.conn)
		if c.code != "" {
			if intake.ErrorCode(err) != c.code {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := titles(doc)
		if len(got) != len(c.want) {
			t.Errorf("%s: channels %v, want %v", c.name, got, c.want)
		}
		for _, w := range c.want {
			if !got[w] {
				t.Errorf("%s: channels %v, want %v", c.name, got, c.want)
			}
		}
	}
}

// heldTypes is a store whose first event-type list waits until the test
// lets it go, reporting whether it came marked as an operator's read.
type heldTypes struct {
	intake.Store
	calls   atomic.Int32
	marked  chan bool
	release chan struct{}
}

func (s *heldTypes) ListEventTypes(ctx context.Context, sc intake.Scope, f intake.EventTypeFilter) ([]intake.EventType, error) {
	if s.calls.Add(1) == 1 {
		s.marked <- intake.IsOperatorRead(ctx)
		<-s.release
	}
	return s.Store.ListEventTypes(ctx, sc, f)
}

// TestAsyncAPIDocumentIsAnOperatorsReadWithinItsOrgsBudget: the document is
// read on the operators' connections, within the org's share of the read
// budget: past it, the org's next read is refused (429).
func TestAsyncAPIDocumentIsAnOperatorsReadWithinItsOrgsBudget(t *testing.T) {
	ctx := context.Background()
	held := &heldTypes{Store: testkit.SQLite(t), marked: make(chan bool, 1), release: make(chan struct{})}
	ctl, a, _ := budgetPlane(t, held, control.ReadBudget{PerOrg: 1, Total: 4, Wait: 10 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := ctl.AsyncAPIDocument(ctx, a, "", "")
		done <- err
	}()
	if !<-held.marked {
		t.Error("the document's read reached the store unmarked: it would run on the pipeline's connections")
	}
	if _, err := ctl.EventTypes(ctx, a, ""); intake.ErrorCode(err) != intake.EBUSY {
		t.Errorf("a read while the document holds the org's one: %v, want EBUSY", err)
	}
	close(held.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
