package console

import (
	"strings"
	"testing"
	"time"
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
