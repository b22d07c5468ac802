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
