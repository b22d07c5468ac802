package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
)

// TestEachReadRefusesABadIDOrFilterWithOneError: every operator read checks
// what it is given in the control plane, one rule and one message each, so
// the API and the console cannot answer the same mistake two ways.
func TestEachReadRefusesABadIDOrFilterWithOneError(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	sealer := testkit.Sealer(t)
	ctl := control.New(control.Config{Store: s, Sealer: sealer})
	staff := control.Caller{Actor: "staff"}
	org, _, err := ctl.CreateOrg(ctx, staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	key := control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_test", Role: intake.RoleAdmin}
	long := func(n int) string { return strings.Repeat("x", n) }
	errOf := func(_ any, err error) error { return err }
	errOf3 := func(_, _ any, err error) error { return err }
	const badID = `id "nope" is not a valid id`
	const badLimit = "limit must be an integer between 1 and 500"

	for _, c := range []struct {
		read string
		err  error
		code string
		want string
	}{
		{"Message", errOf(ctl.Message(ctx, key, "nope")), intake.EINVALID, badID},
		{"MessageAttempts", errOf(ctl.MessageAttempts(ctx, key, "nope")), intake.EINVALID, badID},
		{"MessageBody", errOf3(ctl.MessageBody(ctx, key, "nope")), intake.EINVALID, badID},
		{"Event", errOf(ctl.Event(ctx, key, "nope")), intake.EINVALID, badID},
		{"EventDetail", errOf(ctl.EventDetail(ctx, key, "nope")), intake.EINVALID, badID},
		{"EventRoutes", errOf(ctl.EventRoutes(ctx, key, []string{"nope"})), intake.EINVALID, `event_id "nope" is not a valid id`},
		{"Connection", errOf(ctl.Connection(ctx, key, "nope")), intake.EINVALID, badID},
		{"Endpoint", errOf(ctl.Endpoint(ctx, key, "nope")), intake.EINVALID, badID},
		{"Consumer", errOf(ctl.Consumer(ctx, key, "nope")), intake.EINVALID, badID},
		{"Org", errOf(ctl.Org(ctx, key, "nope")), intake.EINVALID, badID},
		{"Notifications", errOf(ctl.Notifications(ctx, key, "nope")), intake.EINVALID, badID},
		{"ConsumerHealth", errOf(ctl.ConsumerHealth(ctx, key, "nope")), intake.EINVALID, badID},

		{"Messages endpoint_id", errOf(ctl.Messages(ctx, key, intake.MessageFilter{EndpointID: "nope"})), intake.EINVALID,
			`endpoint_id "nope" is not a valid id`},
		{"Messages state", errOf(ctl.Messages(ctx, key, intake.MessageFilter{State: "lost"})), intake.EINVALID,
			"state must be one of queued, processing"},
		{"Messages provider_event_id", errOf(ctl.Messages(ctx, key, intake.MessageFilter{ProviderEventID: long(501)})), intake.EINVALID,
			"provider_event_id must be at most 500 bytes"},
		{"Messages limit", errOf(ctl.Messages(ctx, key, intake.MessageFilter{Limit: 501})), intake.EINVALID, badLimit},
		{"Messages cursor", errOf(ctl.Messages(ctx, key, intake.MessageFilter{Cursor: "zzz"})), intake.EINVALID, "malformed cursor"},
		{"CountMessages state", errOf(ctl.CountMessages(ctx, key, intake.MessageFilter{State: "lost"})), intake.EINVALID,
			"state must be one of queued, processing"},
		{"ReplayDead endpoint_id", errOf(ctl.ReplayDead(ctx, key, intake.MessageFilter{EndpointID: "nope"})), intake.EINVALID,
			`endpoint_id "nope" is not a valid id`},

		{"Events consumer_id", errOf(ctl.Events(ctx, key, intake.EventFilter{ConsumerID: "nope"})), intake.EINVALID,
			`consumer_id "nope" is not a valid id`},
		{"Events state", errOf(ctl.Events(ctx, key, intake.EventFilter{State: "done"})), intake.EINVALID,
			"state must be one of pending, delivered"},
		{"Events type", errOf(ctl.Events(ctx, key, intake.EventFilter{Type: long(201)})), intake.EINVALID, "type must be at most 200 bytes"},
		{"Events cursor", errOf(ctl.Events(ctx, key, intake.EventFilter{Cursor: "zzz"})), intake.EINVALID, "malformed cursor"},
		{"RerouteWhere type", errOf(ctl.RerouteWhere(ctx, key, intake.EventFilter{Type: long(201)}, false)), intake.EINVALID,
			"type must be at most 200 bytes"},
		{"Unclaimed cursor", errOf(ctl.Unclaimed(ctx, staff, 0, "zzz")), intake.EINVALID, "malformed cursor"},
		{"Unclaimed by an org", errOf(ctl.Unclaimed(ctx, key, 0, "")), intake.EFORBIDDEN, "only the staff token"},

		{"Audit limit", errOf(ctl.Audit(ctx, key, intake.AuditFilter{Limit: -1})), intake.EINVALID, badLimit},
		{"Audit cursor", errOf(ctl.Audit(ctx, key, intake.AuditFilter{Cursor: "zzz"})), intake.EINVALID, "malformed cursor"},
		{"Overview hours", errOf(ctl.Overview(ctx, key, intake.OverviewQuery{Hours: intake.MaxOverviewHours + 1, Now: time.Now()})),
			intake.EINVALID, "an overview covers 1 to 168 hours"},
		{"ParseLimit 0", errOf(control.ParseLimit("0")), intake.EINVALID, badLimit},
		{"ParseLimit 501", errOf(control.ParseLimit("501")), intake.EINVALID, badLimit},
		{"ParseLimit ten", errOf(control.ParseLimit("ten")), intake.EINVALID, badLimit},
	} {
		if intake.ErrorCode(c.err) != c.code || !strings.Contains(intake.ErrorMessage(c.err), c.want) {
			t.Errorf("%s: %v, want %s %q", c.read, c.err, c.code, c.want)
		}
	}

	// What passes the checks reads in the caller's scope.
	if n, err := control.ParseLimit(""); n != intake.DefaultPageSize || err != nil {
		t.Errorf("ParseLimit(\"\") = %d, %v; want the default", n, err)
	}
	if _, err := ctl.Unclaimed(ctx, staff, 10, ""); err != nil {
		t.Errorf("Unclaimed for staff: %v", err)
	}
	if _, err := ctl.Messages(ctx, key, intake.MessageFilter{State: intake.MessageDead, Limit: 500}); err != nil {
		t.Errorf("Messages with a good filter: %v", err)
	}
}

// TestWithinNarrowsStaffToOneOrgAsItsAdminAndLeavesAnOrgsCallerAlone: a
// staff read about one org's rows sees that org's alone, as its admin; an
// org's caller can widen neither its org nor its role.
func TestWithinNarrowsStaffToOneOrgAsItsAdminAndLeavesAnOrgsCallerAlone(t *testing.T) {
	staff := control.Caller{Actor: "staff"}
	if got := staff.Within("o1"); got.Scope.OrgID != "o1" || got.Role != intake.RoleAdmin {
		t.Errorf("staff within o1: %+v, want o1's admin", got)
	}
	key := control.Caller{Scope: intake.Scope{OrgID: "o1"}, Actor: "key:ik_x", Role: intake.RoleViewer}
	if got := key.Within("o2"); got.Scope.OrgID != "o1" || got.Role != intake.RoleViewer {
		t.Errorf("an org's viewer within o2: %+v, want its own org and role", got)
	}
}

// TestTheReplicaIsInStaffsOverviewOnly: with the store replicated, staff's
// overview tells how the replica stands, as it stands at the read; an
// org's overview does not, the replica being the server's.
func TestTheReplicaIsInStaffsOverviewOnly(t *testing.T) {
	ctx := context.Background()
	sealer := testkit.Sealer(t)
	now := intake.ReplicaState{Lag: 1500 * time.Millisecond, LastSync: time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)}
	ctl := control.New(control.Config{Store: testkit.SQLite(t), Sealer: sealer, Replica: func() intake.ReplicaState { return now }})
	staff := control.Caller{Actor: "staff"}
	org, _, err := ctl.CreateOrg(ctx, staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	q := intake.OverviewQuery{Hours: 1, Now: time.Now()}
	o, err := ctl.Overview(ctx, staff, q)
	if err != nil || o.Replica == nil || *o.Replica != now {
		t.Fatalf("staff's overview: replica %+v, %v; want %+v", o.Replica, err, now)
	}
	now = intake.ReplicaState{Lag: 3 * time.Minute, Errors: 4, Failing: "connection refused"}
	if o, err := ctl.Overview(ctx, staff, q); err != nil || o.Replica == nil || *o.Replica != now {
		t.Fatalf("staff's next overview: replica %+v, %v; want it as it stands now, %+v", o.Replica, err, now)
	}
	viewer := control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_test", Role: intake.RoleAdmin}
	if o, err := ctl.Overview(ctx, viewer, q); err != nil || o.Replica != nil {
		t.Fatalf("an org's overview: replica %+v, %v; want none", o.Replica, err)
	}
}
