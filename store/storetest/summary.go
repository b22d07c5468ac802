package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testSummary places messages in every state in three hours and around
// them, and checks every count of the summary exactly.
func testSummary(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s, "a"), newFixture(t, s, "b")
	since := t0.Add(-3 * time.Hour)
	at := func(h, min int) time.Time {
		return since.Add(time.Duration(h)*time.Hour + time.Duration(min)*time.Minute)
	}
	later := t0.Add(24 * time.Hour) // not due when claimed: stays queued

	plan := map[string]intake.MessageState{}
	put := func(f fixture, received time.Time, to intake.MessageState, replayOf string) *intake.Message {
		t.Helper()
		m := f.message("m"+intake.NewID(), received)
		m.ReplayOf = replayOf
		m.NextAttemptAt = since.Add(-time.Hour)
		if to == intake.MessageQueued {
			m.NextAttemptAt = later
		}
		if err := s.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
		plan[m.ID] = to
		return m
	}
	first := put(a, at(0, 10), intake.MessageProcessed, "")
	put(a, at(0, 59), intake.MessageIgnored, "")
	put(a, at(1, 0), intake.MessageDead, "")
	put(a, at(1, 20), intake.MessageFailed, "")
	put(a, at(1, 40), intake.MessageProcessing, "")
	put(a, at(2, 30), intake.MessageQueued, "")
	put(a, at(2, 31), intake.MessageProcessed, "")
	put(a, at(2, 32), intake.MessageProcessed, first.ID) // a replay: not in the hours
	put(a, since.Add(-time.Minute), intake.MessageQueued, "")
	put(a, at(3, 0), intake.MessageProcessed, "") // the window's end is open
	put(b, at(0, 30), intake.MessageProcessed, "")
	put(b, at(0, 31), intake.MessageQueued, "")

	for _, c := range claimAll(t, s, t0) {
		to := plan[c.Message.ID]
		if to == intake.MessageProcessing {
			continue
		}
		st := intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: to, Outcome: intake.OutcomeEvents}
		switch to {
		case intake.MessageIgnored:
			st.Outcome = "signature"
		case intake.MessageFailed:
			st.Outcome, st.NextAttemptAt = "", later
		case intake.MessageDead:
			st.Outcome = ""
		}
		if _, err := s.SettleMessage(ctx, t0, st); err != nil {
			t.Fatal(err)
		}
	}

	type counts = map[intake.MessageState]int
	q := intake.SummaryQuery{Since: since, Hours: 3, QueuedBefore: at(1, 0)}
	for _, tc := range []struct {
		name         string
		sc           intake.Scope
		hours        []counts
		live         counts
		queuedBefore int
	}{
		{"org a", intake.Scope{OrgID: a.org.ID},
			[]counts{{"processed": 1, "ignored": 1}, {"dead": 1, "failed": 1, "processing": 1}, {"queued": 1, "processed": 1}},
			counts{"queued": 2, "processing": 1, "failed": 1}, 1},
		{"staff", intake.Scope{},
			[]counts{{"processed": 2, "ignored": 1, "queued": 1}, {"dead": 1, "failed": 1, "processing": 1}, {"queued": 1, "processed": 1}},
			counts{"queued": 3, "processing": 1, "failed": 1}, 2},
	} {
		got, err := s.SummarizeMessages(ctx, tc.sc, q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got.Hours, tc.hours) || !reflect.DeepEqual(got.Live, tc.live) || got.QueuedBefore != tc.queuedBefore {
			t.Fatalf("%s: summary = %+v\nwant hours %v live %v queued before %d", tc.name, got, tc.hours, tc.live, tc.queuedBefore)
		}
	}
	for _, hours := range []int{0, intake.MaxSummaryHours + 1} {
		_, err := s.SummarizeMessages(ctx, intake.Scope{}, intake.SummaryQuery{Since: since, Hours: hours})
		wantCode(t, err, intake.EINVALID)
	}
}
