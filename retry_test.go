package intake_test

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func TestARetrySelectsOneEventOrOneConsumersRoutes(t *testing.T) {
	id, other := intake.NewID(), intake.NewID()
	for _, tc := range []struct {
		sel  intake.RetrySelection
		want string // "" for valid, else a part of the error
	}{
		{intake.RetrySelection{EventID: id}, ""},
		{intake.RetrySelection{ConsumerID: id}, ""},
		{intake.RetrySelection{ConsumerID: id, EventIDs: []string{other}}, ""},
		{intake.RetrySelection{}, "one event, or a consumer's routes"},
		{intake.RetrySelection{EventID: id, ConsumerID: other}, "one event, or a consumer's routes"},
		{intake.RetrySelection{EventIDs: []string{other}}, "one event, or a consumer's routes"},
		{intake.RetrySelection{EventID: "../x"}, "not a valid id"},
		{intake.RetrySelection{ConsumerID: id, EventIDs: []string{"x y"}}, "not a valid id"},
	} {
		err := tc.sel.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && (intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("%+v: %v, want %q", tc.sel, err, tc.want)
		}
	}
}

func TestOnlyEventsNotSettledForGoodAreRetried(t *testing.T) {
	for _, st := range intake.EventStates {
		err := intake.CheckRetry("e", st)
		reroutable := intake.CheckEventTransition(st, intake.EventPending) == nil
		if reroutable != (err != nil) {
			t.Errorf("%s: %v", st, err)
		}
		if err != nil && (intake.ErrorCode(err) != intake.ECONFLICT || !strings.Contains(err.Error(), "POST /api/v1/events/e/reroute")) {
			t.Errorf("%s: %v, want a conflict naming the re-route", st, err)
		}
	}
}

func TestCallsAreBucketedByHourAndByDayEndingWithTheCurrentOne(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	ms := time.Millisecond
	calls := []intake.DeliveryCall{
		{At: now.Add(-29 * time.Minute), Latency: 10 * ms},               // 12:01: the current hour
		{At: now.Add(20 * time.Minute), Failed: true, Latency: 30 * ms},  // 12:50: later this hour
		{At: now.Add(31 * time.Minute), Latency: 99 * ms},                // 13:01: after the window
		{At: now.Add(-90 * time.Minute), Failed: true, Latency: 20 * ms}, // 11:00
		{At: now.Add(-24 * time.Hour), Latency: 40 * ms},                 // yesterday 12:30: before the 24 h
		{At: now.Add(-6*24*time.Hour - 12*time.Hour), Latency: 50 * ms},  // 24 Nov 00:30: the first day
		{At: now.Add(-7*24*time.Hour + 11*time.Hour), Latency: 60 * ms},  // 23 Nov 23:30: before the 7 d
	}
	for _, tc := range []struct {
		w     intake.StatsWindow
		n     int
		first time.Time
		want  map[int]intake.DeliveryBucket
	}{
		{intake.StatsDay, 24, time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC), map[int]intake.DeliveryBucket{
			22: {Failed: 1, P50: 20 * ms, P99: 20 * ms},
			23: {Delivered: 1, Failed: 1, P50: 10 * ms, P99: 30 * ms},
		}},
		{intake.StatsWeek, 7, time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), map[int]intake.DeliveryBucket{
			0: {Delivered: 1, P50: 50 * ms, P99: 50 * ms},
			5: {Delivered: 1, P50: 40 * ms, P99: 40 * ms},
			6: {Delivered: 2, Failed: 2, P50: 20 * ms, P99: 99 * ms},
		}},
	} {
		got, err := intake.BucketCalls(tc.w, now, calls)
		if err != nil || len(got) != tc.n || !got[0].Start.Equal(tc.first) {
			t.Fatalf("%s: %d buckets from %v, %v", tc.w, len(got), got, err)
		}
		for i, b := range got {
			want := tc.want[i]
			want.Start = b.Start
			if b != want {
				t.Errorf("%s bucket %d = %+v, want %+v", tc.w, i, b, want)
			}
		}
	}
	if _, err := intake.BucketCalls("30d", now, nil); intake.ErrorCode(err) != intake.EINVALID {
		t.Errorf("a 30d window: %v", err)
	}
}
