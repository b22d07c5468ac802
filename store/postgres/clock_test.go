package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// leased is a kind of work two processes lease from one database: how to
// put one item of it up, and how a process claims what is due.
type leased struct {
	name  string
	seed  func(t *testing.T, s *Store, o org, consumer string) string
	claim func(s *Store, now time.Time, lease time.Duration) ([]string, error)
}

var leasedWork = []leased{
	{name: "messages",
		seed: func(t *testing.T, s *Store, o org, _ string) string {
			return o.ingest(t, s, `{"id":"`+intake.NewID()+`"}`).ID
		},
		claim: func(s *Store, now time.Time, lease time.Duration) ([]string, error) {
			cs, err := s.ClaimMessages(context.Background(), now, lease, 100)
			var ids []string
			for _, c := range cs {
				ids = append(ids, c.Message.ID)
			}
			return ids, err
		}},
	{name: "events",
		seed: func(t *testing.T, s *Store, o org, _ string) string {
			_, e := o.processed(t, s, `{"id":"`+intake.NewID()+`"}`)
			return e.ID
		},
		claim: func(s *Store, now time.Time, lease time.Duration) ([]string, error) {
			cs, err := s.ClaimEvents(context.Background(), now, lease, 100)
			var ids []string
			for _, c := range cs {
				ids = append(ids, c.Event.ID)
			}
			return ids, err
		}},
	{name: "calls",
		seed: func(t *testing.T, s *Store, o org, consumer string) string {
			return o.fannedOut(t, s, 1, consumer)[0].ID
		},
		claim: func(s *Store, now time.Time, lease time.Duration) ([]string, error) {
			cs, err := s.ClaimRoutes(context.Background(), now, lease, intake.CallShares{Total: 100})
			var ids []string
			for _, c := range cs {
				ids = append(ids, c.Event.ID)
			}
			return ids, err
		}},
	{name: "replay jobs",
		seed: func(t *testing.T, s *Store, o org, _ string) string {
			j := intake.ReplayJob{ID: intake.NewID(), OrgID: o.org.ID, EndpointID: o.ep.ID, Since: t0.Add(-time.Hour), Until: t0,
				CreatedAt: t0, UpdatedAt: t0}
			if err := s.CreateReplayJob(context.Background(), j); err != nil {
				t.Fatal(err)
			}
			return j.ID
		},
		claim: func(s *Store, now time.Time, lease time.Duration) ([]string, error) {
			var ids []string
			for {
				j, ok, err := s.ClaimReplayJob(context.Background(), now, lease)
				if err != nil || !ok {
					return ids, err
				}
				ids = append(ids, j.ID)
			}
		}},
}

// TestLeasesHoldAcrossProcessesWhoseClocksJump has two processes (two
// stores, timed by PostgreSQL's clock as intake serves) lease messages,
// events, calls and replay jobs from one database while one process's clock jumps an
// hour ahead and then an hour back. The process ahead takes nothing the
// other holds, and what it leases is taken over once its lease has run
// out, not an hour later; the process behind takes over the other's
// expired leases on time. Each lease is held by one process at a time, so
// no message is processed and no call made by both.
func TestLeasesHoldAcrossProcessesWhoseClocksJump(t *testing.T) {
	const short = 2 * time.Second
	for _, w := range leasedWork {
		t.Run(w.name, func(t *testing.T) {
			url := pgtest.Database(t)
			steady := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
			jumpy := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
			o := newOrg(t, steady, "acme")
			consumer := o.consumer(t, steady, intake.Controls{}).ID
			now := func() time.Time { return time.Now().UTC() }
			claim := func(s *Store, at time.Time, lease time.Duration) []string {
				t.Helper()
				ids, err := w.claim(s, at, lease)
				if err != nil {
					t.Fatal(err)
				}
				return ids
			}
			// takenOver polls s, its clock off by skew, until it claims id,
			// and fails if it claims anything else or claims id before
			// the lease taken at since has run out.
			takenOver := func(s *Store, skew time.Duration, id string, since time.Time, lease time.Duration) {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for {
					got := claim(s, now().Add(skew), time.Minute)
					if len(got) > 0 {
						if !slices.Equal(got, []string{id}) {
							t.Fatalf("claimed %v, want only %s: another's live lease was taken", got, id)
						}
						held := time.Since(since)
						if held < lease {
							t.Fatalf("%s taken over %v after its %v lease was taken", id, held, lease)
						}
						t.Logf("taken over by the process %v off, %v after a %v lease was taken", skew, held.Round(time.Millisecond), lease)
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s not taken over 30 s after its %v lease was taken: the lease is held past its time", id, lease)
					}
					time.Sleep(50 * time.Millisecond) // polls PostgreSQL's clock, which the test cannot step
				}
			}

			held := w.seed(t, steady, o, consumer)
			if got := claim(steady, now(), time.Hour); !slices.Equal(got, []string{held}) {
				t.Fatalf("steady claimed %v, want %s", got, held)
			}

			// An hour ahead: nothing the other holds is due to it...
			if got := claim(jumpy, now().Add(time.Hour), short); len(got) != 0 {
				t.Fatalf("the process an hour ahead took %v, leased to the other for an hour", got)
			}
			// ...and what it leases is held for its lease, not an hour more.
			ahead := w.seed(t, steady, o, consumer)
			since := time.Now()
			if got := claim(jumpy, now().Add(time.Hour), short); !slices.Equal(got, []string{ahead}) {
				t.Fatalf("the process an hour ahead claimed %v, want %s", got, ahead)
			}
			takenOver(steady, 0, ahead, since, short)

			// An hour behind: the other's leases still run out on time.
			behind := w.seed(t, steady, o, consumer)
			since = time.Now()
			if got := claim(steady, now(), short); !slices.Equal(got, []string{behind}) {
				t.Fatalf("steady claimed %v, want %s", got, behind)
			}
			takenOver(jumpy, -time.Hour, behind, since, short)
		})
	}
}

// TestAReleaseByAProcessAheadFreesTheMessageAtOnce releases a message from
// a process whose clock is an hour ahead: another process claims it at
// once, not an hour later.
func TestAReleaseByAProcessAheadFreesTheMessageAtOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	steady := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
	jumpy := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
	o := newOrg(t, steady, "acme")
	m := o.ingest(t, steady, `{"id":"evt_1"}`)
	ahead := time.Now().UTC().Add(time.Hour)
	c, err := jumpy.ClaimMessages(ctx, ahead, time.Hour, 1)
	if err != nil || len(c) != 1 {
		t.Fatalf("claims %v %v", c, err)
	}
	if err := jumpy.ReleaseMessage(ctx, ahead, 0, m.ID, c[0].Attempt); err != nil {
		t.Fatal(err)
	}
	c, err = steady.ClaimMessages(ctx, time.Now().UTC(), time.Minute, 1)
	if err != nil || len(c) != 1 || c[0].Message.ID != m.ID || c[0].Attempt != 1 {
		t.Fatalf("after the release: claims %v %v, want %s at attempt 1", c, err, m.ID)
	}
}

// retried is a kind of work that fails and is retried after a backoff:
// how to put one item of it up, how a process claims what is due, and how
// a process fails its claim, scheduling the retry by its own clock (as
// the worker and the router decide a backoff).
type retried struct {
	name  string
	seed  func(t *testing.T, s *Store, o org, consumer string)
	claim func(s *Store, now time.Time, lease time.Duration) ([]retryClaim, error)
	fail  func(s *Store, now time.Time, c retryClaim, backoff time.Duration) error
}

// retryClaim is a claimed attempt of a retried item.
type retryClaim struct {
	id, org, consumer string
	attempt           int
}

var retriedWork = []retried{
	{name: "messages",
		seed: func(t *testing.T, s *Store, o org, _ string) {
			m := o.message(`{"id":"` + intake.NewID() + `"}`)
			m.MaxAttempts = 50 // a claim the test probes with may take an attempt
			if err := s.Ingest(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		},
		claim: func(s *Store, now time.Time, lease time.Duration) ([]retryClaim, error) {
			cs, err := s.ClaimMessages(context.Background(), now, lease, 100)
			var out []retryClaim
			for _, c := range cs {
				out = append(out, retryClaim{id: c.Message.ID, attempt: c.Attempt})
			}
			return out, err
		},
		fail: func(s *Store, now time.Time, c retryClaim, backoff time.Duration) error {
			_, err := s.SettleMessage(context.Background(), now, intake.Settlement{MessageID: c.id, Attempt: c.attempt,
				To: intake.MessageFailed, ErrorCode: intake.ErrCodeTransient, ErrorMessage: "store down", NextAttemptAt: now.Add(backoff)})
			return err
		}},
	{name: "calls",
		seed: func(t *testing.T, s *Store, o org, consumer string) {
			o.fannedOut(t, s, 1, consumer)
		},
		claim: func(s *Store, now time.Time, lease time.Duration) ([]retryClaim, error) {
			cs, err := s.ClaimRoutes(context.Background(), now, lease, intake.Calls(100))
			var out []retryClaim
			for _, c := range cs {
				out = append(out, retryClaim{id: c.Event.ID, org: c.Event.OrgID, consumer: c.ConsumerID, attempt: c.Attempt})
			}
			return out, err
		},
		fail: func(s *Store, now time.Time, c retryClaim, backoff time.Duration) error {
			_, err := s.SettleRoute(context.Background(), now, intake.RouteSettlement{EventID: c.id, ConsumerID: c.consumer,
				Attempt: c.attempt, Called: true, Delivery: &intake.Delivery{ID: intake.NewID(), OrgID: c.org, EventID: c.id, ConsumerID: c.consumer,
					Attempt: c.attempt, Outcome: intake.DeliveryRetry, StatusCode: 503, At: now}},
				intake.Backoff{Base: backoff, Max: backoff})
			return err
		}},
}

// TestRetriesAreDueByPostgresClockAcrossProcessesWhoseClocksJump has two
// processes (two stores, timed by PostgreSQL's clock as intake serves)
// fail and retry a message and a call while one process's clock is an
// hour ahead and then an hour behind: each schedules a retry after its
// backoff by its own clock, as the worker and the router do. Whoever
// scheduled it, no process takes a retry before its backoff has run (the
// process ahead does not retry at once), and the next one takes it once
// the backoff has run, not an hour later (the process behind does not
// hold it an hour).
func TestRetriesAreDueByPostgresClockAcrossProcessesWhoseClocksJump(t *testing.T) {
	const backoff = 3 * time.Second
	for _, w := range retriedWork {
		t.Run(w.name, func(t *testing.T) {
			url := pgtest.Database(t)
			steady := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
			jumpy := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
			o := newOrg(t, steady, "acme")
			consumer := o.consumer(t, steady, intake.Controls{Retry: intake.RetryPolicy{Attempts: intake.MaxRetryAttempts}}).ID
			now := func() time.Time { return time.Now().UTC() }
			w.seed(t, steady, o, consumer)
			var id string
			claim := func(s *Store, skew, lease time.Duration) []retryClaim {
				t.Helper()
				cs, err := w.claim(s, now().Add(skew), lease)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cs {
					if id == "" {
						id = c.id
					}
					if c.id != id || len(cs) > 1 {
						t.Fatalf("claimed %v, want only %s", cs, id)
					}
				}
				return cs
			}
			// fail fails c by s, its clock off by skew, and returns when it
			// began: the retry is not due before the backoff from then.
			fail := func(s *Store, skew time.Duration, c retryClaim) time.Time {
				t.Helper()
				since := time.Now()
				if err := w.fail(s, now().Add(skew), c, backoff); err != nil {
					t.Fatal(err)
				}
				return since
			}
			// notEarly has s, its clock off by skew, try the retry
			// scheduled at since at once: it must not take it before its
			// backoff has run. (It claims with no lease, so a retry taken
			// on time on a slow machine is another's to take again.)
			notEarly := func(s *Store, skew time.Duration, since time.Time) {
				t.Helper()
				if got := claim(s, skew, 0); len(got) > 0 {
					if held := time.Since(since); held < backoff {
						t.Fatalf("the process %v off retried %s %v after its %v backoff was scheduled", skew, id, held, backoff)
					}
				}
			}
			// onTime polls s, its clock off by skew, until it claims the
			// retry scheduled at since, which it must not before the
			// backoff has run nor 30 s after.
			onTime := func(s *Store, skew time.Duration, since time.Time) retryClaim {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for {
					if got := claim(s, skew, time.Minute); len(got) > 0 {
						held := time.Since(since)
						if held < backoff {
							t.Fatalf("the process %v off retried %s %v after its %v backoff was scheduled", skew, id, held, backoff)
						}
						t.Logf("retried by the process %v off %v after a %v backoff was scheduled", skew, held.Round(time.Millisecond), backoff)
						return got[0]
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s not retried by the process %v off 30 s after its %v backoff was scheduled: the retry is held past its time",
							id, skew, backoff)
					}
					time.Sleep(50 * time.Millisecond) // polls PostgreSQL's clock, which the test cannot step
				}
			}

			first := claim(jumpy, time.Hour, time.Minute)
			if len(first) != 1 {
				t.Fatalf("the process an hour ahead claimed %v, want the item", first)
			}
			// Scheduled an hour ahead: not retried at once, and retried by
			// the other process after the backoff, not an hour later.
			since := fail(jumpy, time.Hour, first[0])
			notEarly(jumpy, time.Hour, since)
			c := onTime(steady, 0, since)
			// Scheduled by the steady clock: the process an hour ahead does
			// not retry it at once; an hour behind, it does not hold it an hour.
			since = fail(steady, 0, c)
			notEarly(jumpy, time.Hour, since)
			c = onTime(jumpy, -time.Hour, since)
			// Scheduled an hour behind: the steady process does not retry
			// it at once, and retries it after the backoff.
			since = fail(jumpy, -time.Hour, c)
			notEarly(steady, 0, since)
			onTime(steady, 0, since)
		})
	}
}

// TestWhatAProcessAheadMakesDueNowIsDueAtOnce has a process whose clock
// is an hour ahead re-route an event and retry now a call that waits out
// a one-minute backoff: another process takes each at once, not an hour
// later.
func TestWhatAProcessAheadMakesDueNowIsDueAtOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	steady := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
	jumpy := openTimedByPostgres(t, Options{URL: url, MaxConns: 4})
	o := newOrg(t, steady, "acme")
	sc := intake.Scope{OrgID: o.org.ID}
	now := func() time.Time { return time.Now().UTC() }
	ahead := func() time.Time { return now().Add(time.Hour) }

	// An event no consumer took, re-routed by the process ahead.
	e := o.fannedOut(t, steady, 1)[0]
	if got, err := steady.Event(ctx, sc, e.ID); err != nil || got.State != intake.EventNoConsumer {
		t.Fatalf("event %s %v, want no_consumer", got.State, err)
	}
	if err := jumpy.RerouteEvent(ctx, sc, e.ID, ahead()); err != nil {
		t.Fatal(err)
	}
	if cs, err := steady.ClaimEvents(ctx, now(), time.Minute, 10); err != nil || len(cs) != 1 || cs[0].Event.ID != e.ID {
		t.Fatalf("after a re-route by the process ahead: claims %v %v, want %s at once", cs, err, e.ID)
	}

	// A call failed with a one-minute backoff, retried now by the process ahead.
	consumer := o.consumer(t, steady, intake.Controls{}).ID
	e = o.fannedOut(t, steady, 1, consumer)[0]
	cs, err := steady.ClaimRoutes(ctx, now(), time.Minute, intake.Calls(10))
	if err != nil || len(cs) != 1 {
		t.Fatalf("claims %v %v", cs, err)
	}
	if _, err := steady.SettleRoute(ctx, now(), intake.RouteSettlement{EventID: e.ID, ConsumerID: consumer, Attempt: cs[0].Attempt,
		Called: true, Delivery: &intake.Delivery{ID: intake.NewID(), OrgID: o.org.ID, EventID: e.ID, ConsumerID: consumer,
			Attempt: cs[0].Attempt, Outcome: intake.DeliveryRetry, StatusCode: 503, At: now()}},
		intake.Backoff{Base: time.Minute, Max: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if cs, err := steady.ClaimRoutes(ctx, now(), time.Minute, intake.Calls(10)); err != nil || len(cs) != 0 {
		t.Fatalf("claims %v %v during the backoff, want none", cs, err)
	}
	if r, err := jumpy.RetryNow(ctx, sc, intake.RetrySelection{EventID: e.ID}, ahead(), 10, false); err != nil || r.Count != 1 {
		t.Fatalf("retry now: %v %v, want 1", r, err)
	}
	if cs, err := steady.ClaimRoutes(ctx, now(), time.Minute, intake.Calls(10)); err != nil || len(cs) != 1 || cs[0].Event.ID != e.ID {
		t.Fatalf("after a retry now by the process ahead: claims %v %v, want %s at once", cs, err, e.ID)
	}
}
