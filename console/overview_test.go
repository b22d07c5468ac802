package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func TestTheAlarmsAreTheOpenIssuesByNameAndWhatIntakeIsNotTaking(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	orders := intake.Issue{ID: "i1", Kind: intake.IssueDelivery, ConsumerID: "c1", SubjectName: "orders", Cause: "consumer answered 5xx",
		Count: 13, Events: 5, LastSeenAt: now.Add(-time.Minute)}
	stripe := intake.Issue{ID: "i2", Kind: intake.IssueRequest, ConnectionID: "k1", SubjectName: "stripe live", Cause: "signature does not verify",
		Count: 1, Events: 1, LastSeenAt: now.Add(-time.Hour)}
	rules := intake.Issue{ID: "i3", Kind: intake.IssueRule, ConsumerID: "c2", SubjectName: "crm", Cause: "transform error", Count: 2, Events: 2}
	cases := []struct {
		name string
		v    overviewView
		want []string
	}{
		{"nothing", overviewView{}, nil},
		{"counts alone are not alarms", overviewView{DeadEvents: stateCount{Count: 1}, Retrying: stateCount{Count: 3}, NoConsumer: stateCount{Count: 2}}, nil},
		{"issues, the delivery and request ones first", overviewView{Issues: []intake.Issue{rules, orders, stripe}, OpenIssues: 3},
			[]string{"/console/issues/i1 Consumer orders: consumer answered 5xx: 13 failures over 5 events",
				"/console/issues/i2 Connection stripe live: signature does not verify: 1 failure over 1 event",
				"/console/issues/i3 Consumer crm's rules: transform error: 2 failures over 2 events"}},
		{"more open than named", overviewView{Issues: []intake.Issue{orders}, OpenIssues: 12},
			[]string{"/console/issues/i1 Consumer orders: consumer answered 5xx", "/console/issues?status=open 11 more issues are open."}},
		{"a stalled call names its consumer", overviewView{OldestDueCall: now.Add(-3 * time.Minute), OldestDueCallee: "c1", OldestDueCalleeName: "orders",
			Totals: hourCounts{Dead: 1}},
			[]string{"/console/consumers/c1 Calls to consumer orders are waiting: the oldest has been due for 3m.",
				"/console/dead 1 message received in the last 24 h is dead."}},
		{"a replica a second behind is no alarm", overviewView{Replica: &intake.ReplicaState{Lag: time.Second, LastSync: now}}, nil},
		{"a replica behind comes first", overviewView{Replica: &intake.ReplicaState{Lag: 5 * time.Minute}, Issues: []intake.Issue{orders}, OpenIssues: 1},
			[]string{"#replica The store's replica is 5m behind: the commits since are on this machine's disk only.",
				"/console/issues/i1 Consumer orders"}},
		{"a replica whose syncs fail says why", overviewView{Replica: &intake.ReplicaState{Lag: 2 * time.Second, Errors: 2, Failing: "connection refused"}},
			[]string{"#replica The store's replica is 2s behind: the commits since are on this machine's disk only. Its syncs fail: connection refused"}},
	}
	for _, c := range cases {
		got := alarms(c.v, now, 0)
		if len(got) != len(c.want) {
			t.Errorf("%s: %d alarms %+v, want %d", c.name, len(got), got, len(c.want))
			continue
		}
		for i, a := range got {
			if line := a.Link + " " + a.Text; !strings.HasPrefix(line, c.want[i]) {
				t.Errorf("%s: alarm %d is %q, want it to start %q", c.name, i, line, c.want[i])
			}
		}
	}
}

// No one opening the overview sees figures older than overviewTTL, and the
// loads that arrive while a scope is counted share that count.
func TestOverviewCacheServesNothingOlderThanItsTTL(t *testing.T) {
	var oc overviewCache
	sc := intake.Scope{OrgID: "org_a"}
	counts := 0
	compute := func(_ context.Context, now time.Time) (overviewView, error) {
		counts++
		return overviewView{At: now}, nil
	}
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		at         time.Duration
		wantCounts int
		wantAt     time.Duration
	}{
		{0, 1, 0},
		{4 * time.Second, 1, 0},
		{overviewTTL, 2, overviewTTL},
		{overviewTTL + time.Second, 2, overviewTTL},
		{10 * time.Minute, 3, 10 * time.Minute},
	} {
		v, err := oc.get(context.Background(), sc, t0.Add(step.at), compute)
		if err != nil {
			t.Fatal(err)
		}
		if counts != step.wantCounts || !v.At.Equal(t0.Add(step.wantAt)) {
			t.Fatalf("at +%s: %d counts, figures as of +%s; want %d counts, as of +%s",
				step.at, counts, v.At.Sub(t0), step.wantCounts, step.wantAt)
		}
	}

}
