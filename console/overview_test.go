package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func TestAlarmsCountEventsRetryingAndSayDeadEventsTruly(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		v    overviewView
		want []string
	}{
		{"nothing", overviewView{}, nil},
		{"one of each", overviewView{DeadEvents: stateCount{Count: 1}, Retrying: stateCount{Count: 1}, Totals: hourCounts{Dead: 1}},
			[]string{"1 message received in the last 24 h is dead.",
				"1 event is dead: calls to a consumer failed until its attempts ran out.",
				"1 event is retrying: a consumer's call failed and its next attempt is scheduled."}},
		{"several", overviewView{Retrying: stateCount{Count: 3}, NoConsumer: stateCount{Count: 2}},
			[]string{"3 events are retrying: a consumer's call failed and its next attempt is scheduled.", "2 events matched no consumer."}},
	}
	for _, c := range cases {
		var got []string
		for _, a := range alarms(c.v, now, 0, false) {
			got = append(got, a.Text)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: alarms\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
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
