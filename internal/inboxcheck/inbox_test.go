package inboxcheck

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/inbox"
	"github.com/intakehq/intake/internal/testkit"
)

func TestAnEventIsAppliedOnceAndARepeatIsAnswered2xxWithoutCallingAgain(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		env := sample("evt-once", "stripe.invoice.paid")
		if a := deliver(t, h, env, c.Now()); a.status != http.StatusOK || a.body["outcome"] != "handled" || a.body["duplicate"] != false {
			t.Fatalf("first delivery answered %d %s", a.status, a.raw)
		}
		c.Advance(time.Minute) // intake's retry, signed afresh
		if a := deliver(t, h, env, c.Now()); a.status != http.StatusOK || a.body["outcome"] != "handled" || a.body["duplicate"] != true {
			t.Fatalf("repeated delivery answered %d %s", a.status, a.raw)
		}
		if l.calls.Load() != 1 || d.applied(t, env.ID) != 1 || d.records(t) != 1 {
			t.Fatalf("called %d times, applied %d times, %d records; want 1 each", l.calls.Load(), d.applied(t, env.ID), d.records(t))
		}
	})
}

// intake's own sender delivers to the inbox over HTTP and reads its
// answers: handled, ignored, and a repeat of the ignored one read as
// ignored again.
func TestIntakesSenderDeliversToTheInboxAndReadsItsOutcomes(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		h, err := inbox.New(d.db, l.apply, inbox.Options{Secrets: []string{delivery.NewSecret(), testSecret}, Dialect: d.dialect})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		s := delivery.NewSender(delivery.Options{Timeout: 10 * time.Second})
		defer s.Close()
		ctx := context.Background()
		for _, c := range []struct{ id, typ, want string }{
			{"evt-paid", "stripe.invoice.paid", intake.DeliveryHandled},
			{"evt-skip", "stripe.customer.ignored", intake.DeliveryIgnored},
			{"evt-skip", "stripe.customer.ignored", intake.DeliveryIgnored},
			{"evt-paid", "stripe.invoice.paid", intake.DeliveryHandled},
		} {
			env := sample(c.id, c.typ)
			body, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			if r := s.SendBody(ctx, srv.URL, []string{testSecret}, env.ID, body, nil, time.Now()); r.Outcome != c.want {
				t.Fatalf("%s: intake read %+v, want %s", c.id, r, c.want)
			}
		}
		if l.calls.Load() != 2 || d.applied(t, "evt-paid") != 1 || d.applied(t, "evt-skip") != 1 {
			t.Fatalf("called %d times; want each event applied once", l.calls.Load())
		}
	})
}

func TestTheFunctionReceivesTheEnvelopesFieldsAndAReplaysReplayOf(t *testing.T) {
	c := testkit.NewClock(t0)
	db := testDB{dialect: "sqlite", driver: "sqlite", dsn: sqliteDSN(t.TempDir() + "/app.db")}
	db.db = db.reopen(t)
	l := newLedger(t, db)
	l.called = make(chan inbox.Event, 1)
	h := l.handler(t, c)
	ev := &intake.Event{ID: "evt-replay", Type: "github.issues.opened", Kind: intake.KindEvent, OrgID: "org_1", ConnectionID: "con_1",
		Provider: "github", ProviderEventID: "d-1", MessageID: "msg_2", Replay: true, ReplayOf: "evt-original",
		OccurredAt: t0.Add(-time.Hour), ReceivedAt: t0.Add(-time.Minute), Subject: &intake.Subject{App: "tracker", RecordID: "T-7"},
		Data: json.RawMessage(`{"action":"opened"}`), DataTruncated: true}
	env := intake.NewEnvelope(ev)
	env.BodyURL = "https://intake.example/raw/1"
	if a := deliver(t, h, env, c.Now()); a.status != http.StatusOK {
		t.Fatalf("answered %d %s", a.status, a.raw)
	}
	got := <-l.called
	want := inbox.Event{ID: ev.ID, Type: ev.Type, Kind: "event", OrgID: "org_1", ConnectionID: "con_1", Provider: "github",
		ProviderEventID: "d-1", MessageID: "msg_2", Replay: true, ReplayOf: "evt-original", OccurredAt: ev.OccurredAt,
		ReceivedAt: ev.ReceivedAt, Subject: &inbox.Subject{App: "tracker", RecordID: "T-7"}, Data: ev.Data, DataTruncated: true,
		BodyURL: env.BodyURL}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("the function received\n%s\nwant\n%s", g, w)
	}
	if !got.OccurredAt.Equal(want.OccurredAt) || !got.ReceivedAt.Equal(want.ReceivedAt) {
		t.Fatalf("times %v %v, want %v %v", got.OccurredAt, got.ReceivedAt, want.OccurredAt, want.ReceivedAt)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAForgedSignatureIsRefusedAndNothingApplied(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		env := sample("evt-forged", "stripe.invoice.paid")
		body, _ := json.Marshal(env)
		other := signedRequest(t, delivery.NewSecret(), env.ID, body, c.Now())
		tampered := signedRequest(t, testSecret, env.ID, body, c.Now())
		tampered.Header.Set("webhook-id", "evt-other")
		unsigned := signedRequest(t, testSecret, env.ID, body, c.Now())
		unsigned.Header.Del("webhook-signature")
		asymmetric := signedRequest(t, testSecret, env.ID, body, c.Now())
		asymmetric.Header.Set("webhook-signature", "v1a,"+strings.TrimPrefix(asymmetric.Header.Get("webhook-signature"), "v1,"))
		for name, r := range map[string]*http.Request{"another secret": other, "another id": tampered, "no signature": unsigned,
			"v1a in place of v1": asymmetric} {
			if a := serve(h, r); a.status != http.StatusUnauthorized || a.code() != "signature" {
				t.Errorf("%s: answered %d %s, want 401 signature", name, a.status, a.raw)
			}
		}
		if l.calls.Load() != 0 || d.records(t) != 0 {
			t.Fatalf("a forged delivery was applied: %d calls, %d records", l.calls.Load(), d.records(t))
		}
	})
}

func TestAnExpiredTimestampIsRefusedAndNothingApplied(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		env := sample("evt-late", "stripe.invoice.paid")
		for _, at := range []time.Time{t0.Add(-5*time.Minute - time.Second), t0.Add(5*time.Minute + time.Second), time.Unix(1614265330, 0)} {
			if a := deliver(t, h, env, at); a.status != http.StatusUnauthorized || a.code() != "timestamp" {
				t.Errorf("signed at %v: answered %d %s, want 401 timestamp", at, a.status, a.raw)
			}
		}
		if l.calls.Load() != 0 || d.records(t) != 0 {
			t.Fatalf("an expired delivery was applied: %d calls, %d records", l.calls.Load(), d.records(t))
		}
		if a := deliver(t, h, env, t0.Add(-5*time.Minute)); a.status != http.StatusOK {
			t.Fatalf("signed at the tolerance's edge: answered %d %s", a.status, a.raw)
		}
	})
}

func TestABodyThatIsNotAnEnvelopeIsRefusedAndNothingApplied(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		for name, body := range map[string]string{
			"not JSON":         `id=evt-1&type=x`,
			"a JSON array":     `[{"id":"evt-1","type":"x"}]`,
			"no type":          `{"id":"evt-1","data":{}}`,
			"another id":       `{"id":"evt-2","type":"stripe.invoice.paid"}`,
			"a provider event": `{"id":"evt_1","object":"event","type":"invoice.paid"}`,
		} {
			if a := serve(h, signedRequest(t, testSecret, "evt-1", []byte(body), c.Now())); a.status != http.StatusBadRequest || a.code() != "envelope" {
				t.Errorf("%s: answered %d %s, want 400 envelope", name, a.status, a.raw)
			}
		}
		if l.calls.Load() != 0 || d.records(t) != 0 {
			t.Fatalf("a body that is not an envelope was applied: %d calls, %d records", l.calls.Load(), d.records(t))
		}
	})
}

func TestAFailingFunctionAnswers5xxRecordsNothingAndALaterDeliveryApplies(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		env := sample("evt-fails", "stripe.invoice.paid")
		l.fail.Store(true)
		if a := deliver(t, h, env, c.Now()); a.status != http.StatusInternalServerError || a.code() != "failed" {
			t.Fatalf("a failing function: answered %d %s, want 500", a.status, a.raw)
		}
		if d.applied(t, env.ID) != 0 || d.records(t) != 0 {
			t.Fatalf("after a failure: applied %d times, %d records; want nothing kept", d.applied(t, env.ID), d.records(t))
		}
		l.fail.Store(false)
		c.Advance(10 * time.Second)
		if a := deliver(t, h, env, c.Now()); a.status != http.StatusOK || a.body["duplicate"] != false {
			t.Fatalf("the retry: answered %d %s", a.status, a.raw)
		}
		if l.calls.Load() != 2 || d.applied(t, env.ID) != 1 || d.records(t) != 1 {
			t.Fatalf("called %d times, applied %d, %d records; want 2, 1, 1", l.calls.Load(), d.applied(t, env.ID), d.records(t))
		}
	})
}

// copies delivers n copies of env at once while the first call the
// ledger receives is held, releases it once every other copy waits on the
// database (or, on SQLite, has reached the handler), and returns every
// answer.
func copies(t *testing.T, d testDB, l *ledger, h http.Handler, env intake.Envelope, at time.Time, n int) []answered {
	t.Helper()
	hold := make(chan struct{})
	l.mu.Lock()
	l.hold = hold
	l.mu.Unlock()
	release := sync.OnceFunc(func() {
		l.mu.Lock()
		l.hold = nil
		l.mu.Unlock()
		close(hold)
	})
	defer release()
	var entered sync.WaitGroup
	entered.Add(n)
	answers := make([]answered, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			entered.Done()
			answers[i] = deliver(t, h, env, at)
		})
	}
	entered.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for l.calls.Load() == 0 || waiting(t, d) < n-1 {
		if time.Now().After(deadline) {
			release()
			wg.Wait()
			t.Fatalf("not every copy waits: %d called, %d waiting", l.calls.Load(), waiting(t, d))
		}
		time.Sleep(5 * time.Millisecond)
	}
	release()
	wg.Wait()
	return answers
}

// waiting is how many of the database's sessions wait on the inbox's key;
// on SQLite, whose waiters spin inside the driver, it is taken as all.
func waiting(t *testing.T, d testDB) int {
	switch d.dialect {
	case "postgres":
		return d.count(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
	case "mysql":
		// innodb_trx lags (a cache); the process list shows each insert
		// still running, which it does only while it waits on the key.
		return d.count(t, `SELECT count(*) FROM information_schema.processlist WHERE db = database() AND info LIKE 'INSERT IGNORE INTO inbox_events %'`)
	}
	return 1 << 10
}

func TestEightConcurrentCopiesOfAnEventApplyOnceAndAreAllAnswered2xx(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		env := sample("evt-copies", "stripe.invoice.paid")
		answers := copies(t, d, l, h, env, c.Now(), 8)
		duplicates := 0
		for i, a := range answers {
			if a.status != http.StatusOK || a.body["outcome"] != "handled" {
				t.Errorf("copy %d answered %d %s", i, a.status, a.raw)
			}
			if a.body["duplicate"] == true {
				duplicates++
			}
		}
		if l.calls.Load() != 1 || d.applied(t, env.ID) != 1 || duplicates != 7 {
			t.Fatalf("called %d times, applied %d, %d answered as duplicates; want 1, 1, 7", l.calls.Load(), d.applied(t, env.ID), duplicates)
		}
	})
}

// The copy that got the id first fails while seven wait on it: its
// rollback lets exactly one other apply the event (on MariaDB the waiters
// meet a deadlock, and the loser tries again), and the rest find it done.
func TestConcurrentCopiesWhoseFirstFailsAreAppliedOnceByAnother(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		env := sample("evt-first-fails", "stripe.invoice.paid")
		l.fail.Store(true)
		h, err := inbox.New(d.db, func(ctx context.Context, tx *sql.Tx, e inbox.Event) (inbox.Outcome, error) {
			if l.calls.Load() > 0 {
				l.fail.Store(false) // only the first call fails
			}
			return l.apply(ctx, tx, e)
		}, inbox.Options{Secrets: []string{testSecret}, Dialect: d.dialect, Now: c.Now, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		answers := copies(t, d, l, h, env, c.Now(), 8)
		status := map[int]int{}
		for _, a := range answers {
			status[a.status]++
		}
		if status[http.StatusInternalServerError] != 1 || status[http.StatusOK] != 7 {
			t.Fatalf("answers by status %v, want one 500 and seven 200", status)
		}
		if l.calls.Load() != 2 || d.applied(t, env.ID) != 1 || d.records(t) != 1 {
			t.Fatalf("called %d times, applied %d, %d records; want 2, 1, 1", l.calls.Load(), d.applied(t, env.ID), d.records(t))
		}
	})
}

func TestPruneDeletesOnlyRecordsOlderThanItKeepsAndRefusesTooShortAKeep(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		old := sample("evt-old", "stripe.invoice.paid")
		deliver(t, h, old, c.Now())
		c.Advance(48 * time.Hour)
		recent := sample("evt-recent", "stripe.invoice.paid")
		deliver(t, h, recent, c.Now())
		c.Advance(time.Hour)
		if _, err := h.Prune(context.Background(), time.Hour); err == nil {
			t.Fatal("pruned keeping an hour, under MinKeep")
		}
		n, err := h.Prune(context.Background(), 24*time.Hour)
		if err != nil || n != 1 || d.records(t) != 1 {
			t.Fatalf("prune: %d deleted, %v; %d records left, want 1 and 1", n, err, d.records(t))
		}
		if a := deliver(t, h, recent, c.Now()); a.body["duplicate"] != true {
			t.Fatalf("the kept record no longer answers its repeat: %s", a.raw)
		}
	})
}

func TestNewCreatesItsTableOnceAndKeepsItsRecords(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		deliver(t, l.handler(t, c), sample("evt-kept", "stripe.invoice.paid"), c.Now())
		if a := deliver(t, l.handler(t, c), sample("evt-kept", "stripe.invoice.paid"), c.Now()); a.body["duplicate"] != true {
			t.Fatalf("a second New over the same table forgot the record: %s", a.raw)
		}
		h, err := inbox.New(d.db, l.apply, inbox.Options{Secrets: []string{testSecret}, Dialect: d.dialect, Table: "shop_inbox", Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		if a := deliver(t, h, sample("evt-kept", "stripe.invoice.paid"), c.Now()); a.body["duplicate"] != false {
			t.Fatalf("another table shared the record: %s", a.raw)
		}
	})
}

// Event ids are case-sensitive (intake's are, and so are providers'):
// evt_A and evt_a are two events on every database, MySQL's
// case-insensitive default collation included.
func TestEventIDsDifferingOnlyInCaseAreTwoEvents(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		h := l.handler(t, c)
		upper, lower := sample("evt_A", "stripe.invoice.paid"), sample("evt_a", "stripe.invoice.paid")
		for _, env := range []intake.Envelope{upper, lower} {
			if a := deliver(t, h, env, c.Now()); a.status != http.StatusOK || a.body["duplicate"] != false {
				t.Fatalf("%s answered %d %s, want applied", env.ID, a.status, a.raw)
			}
		}
		for _, env := range []intake.Envelope{upper, lower} {
			if a := deliver(t, h, env, c.Now()); a.status != http.StatusOK || a.body["duplicate"] != true {
				t.Fatalf("%s repeated answered %d %s, want a duplicate", env.ID, a.status, a.raw)
			}
		}
		if l.calls.Load() != 2 || d.records(t) != 2 {
			t.Fatalf("called %d times, %d records; want 2 and 2", l.calls.Load(), d.records(t))
		}
	})
}

// An ignored outcome is written in the transaction that records the id,
// so the copies waiting on that id read it the moment it commits: the
// copy that committed is held right after its commit until every other
// copy has answered, and all eight are answered ignored.
func TestConcurrentCopiesOfAnIgnoredEventAreAllAnsweredIgnored(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		const n = 8
		l := newLedger(t, d)
		c := testkit.NewClock(t0)
		answers := make(chan struct{}, n)
		h := l.handlerOn(t, d.committing(t, func() {
			for range n - 1 {
				select {
				case <-answers:
				case <-time.After(30 * time.Second):
					t.Error("the other copies were not all answered while the committed one was held")
					return
				}
			}
		}), c)
		counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			answers <- struct{}{}
		})
		env := sample("evt-ignored-copies", "stripe.customer.ignored")
		for i, a := range copies(t, d, l, counted, env, c.Now(), n) {
			if a.status != http.StatusOK || a.body["outcome"] != "ignored" {
				t.Errorf("copy %d answered %d %s, want ignored", i, a.status, a.raw)
			}
		}
		if l.calls.Load() != 1 || d.applied(t, env.ID) != 1 || d.records(t) != 1 {
			t.Fatalf("called %d times, applied %d, %d records; want 1 each", l.calls.Load(), d.applied(t, env.ID), d.records(t))
		}
	})
}
