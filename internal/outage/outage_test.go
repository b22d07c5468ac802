package outage_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/outage"
	"github.com/intakehq/intake/internal/testkit"
)

type record struct {
	Level, Msg, After string
	RawKinds          int `json:"kinds"`
	RawHeld           int `json:"repeats_held_back"`
}

func records(t *testing.T, b *bytes.Buffer) []record {
	t.Helper()
	var out []record
	for line := range strings.Lines(b.String()) {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func msgs(rs []record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Msg)
	}
	return out
}

// watched is a PostgreSQL outage watch on a fake clock, the JSON log it and
// its handler write to, and a logger through its handler.
func watched() (*bytes.Buffer, *testkit.Clock, *outage.Watch, *slog.Logger) {
	var b bytes.Buffer
	clock := testkit.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	base := slog.New(slog.NewJSONHandler(&b, nil))
	w := outage.New("postgres", base, clock)
	return &b, clock, w, slog.New(w.Handler(base.Handler()))
}

// TestOutageLogsEachKindOnceThenTheEnd has three loops fail over and over
// while PostgreSQL is unreachable: the log holds the outage's beginning,
// each loop's first failure, and one line at the end that counts the
// repeats held back and says how long it lasted.
func TestOutageLogsEachKindOnceThenTheEnd(t *testing.T) {
	b, clock, w, log := watched()
	down := intake.Unavailable(errors.New("connection reset by peer"))

	log.Error("worker: claim failed", "err", down) // before any failure was reported: passes
	w.Reached()
	for range 20 {
		w.Failed(down)
		log.Error("ingress: commit failed; not acknowledged", "err", down)
		log.Error("router: claim failed", "err", down)
		log.Warn("postgres: search indexer", "err", down)
		// Not about the outage: every one passes.
		log.Error("router: call refused", "err", errors.New("400 from the consumer"))
		clock.Advance(100 * time.Millisecond)
		w.Reached() // a statement that passed while others fail: the link flaps, the outage goes on
	}
	clock.Advance(outage.Quiet)
	w.Reached()
	w.Reached()
	log.Error("ingress: commit failed; not acknowledged", "err", down) // after the outage: passes

	rs := records(t, b)
	want := []string{"worker: claim failed",
		"postgres: unreachable; what fails because of it is logged once per kind until it is back",
		"ingress: commit failed; not acknowledged", "router: claim failed", "postgres: search indexer"}
	for range 20 {
		want = append(want, "router: call refused")
	}
	want = append(want, "postgres: reachable again", "ingress: commit failed; not acknowledged")
	got := msgs(rs)
	// The refused calls interleave with the first lines; compare as sets of counts.
	count := func(ss []string) map[string]int {
		m := map[string]int{}
		for _, s := range ss {
			m[s]++
		}
		return m
	}
	if g, w := count(got), count(want); len(g) != len(w) {
		t.Fatalf("logged %v, want %v", got, want)
	} else {
		for k, n := range w {
			if g[k] != n {
				t.Errorf("%q logged %d times, want %d", k, g[k], n)
			}
		}
	}
	end := rs[len(rs)-2]
	if end.After != "3s" || end.RawKinds != 3 || end.RawHeld != 3*19 {
		t.Errorf("the end of the outage logged after=%s kinds=%d held=%d, want 3s, 3, %d", end.After, end.RawKinds, end.RawHeld, 3*19)
	}
}

// TestOutageAgainLogsEachKindAgain: a second outage is a new one, its
// failures logged once more.
func TestOutageAgainLogsEachKindAgain(t *testing.T) {
	var b bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&b, nil))
	clock := testkit.NewClock(time.Unix(0, 0))
	w := outage.New("postgres", base, clock)
	log := slog.New(w.Handler(base.Handler()).WithAttrs([]slog.Attr{slog.String("component", "router")}))
	down := intake.Unavailable(errors.New("timeout"))
	for range 2 {
		for range 5 {
			w.Failed(down)
			log.Error("router: claim failed", "err", down)
		}
		clock.Advance(outage.Quiet)
		w.Reached()
	}
	n := 0
	for _, m := range msgs(records(t, &b)) {
		if m == "router: claim failed" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("over two outages the claim failure was logged %d times, want 2", n)
	}
}

// TestAFailureReportedAsAnOutageEndsIsNeverLost: a failure reported while
// a success ends the outage is kept, whichever comes first: the failure is
// the outage's last (and the success, too soon after it, ends nothing), or
// the first of a new outage. Either way the watch holds the dependency
// down once both return, so what the failure makes its caller log next is
// held back as the outage's rather than logged as if all were well.
func TestAFailureReportedAsAnOutageEndsIsNeverLost(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	down := intake.Unavailable(errors.New("connection reset by peer"))
	for round := range 20000 {
		w := outage.New("object storage", slog.New(slog.DiscardHandler), clock)
		w.Failed(down)
		clock.Advance(outage.Quiet)
		var wg sync.WaitGroup
		wg.Go(w.Reached)
		wg.Go(func() { w.Failed(down) })
		wg.Wait()
		if !w.Down() {
			t.Fatalf("round %d: a failure reported as the outage ended was lost: the watch holds the dependency up", round)
		}
	}
}

// TestAFailureToldJustAfterTheEndIsTheOutagesTail: a statement sent into
// a partition is answered once the link heals, with the connection
// PostgreSQL ended meanwhile; its caller logs the failure after the outage
// is over. Within Tail of the end, a kind the outage logged is logged at
// info, naming the outage; a kind it did not log, a failure that is not
// unavailable, and anything after Tail are logged as they are.
func TestAFailureToldJustAfterTheEndIsTheOutagesTail(t *testing.T) {
	b, clock, w, log := watched()
	down := intake.Unavailable(errors.New("connection reset by peer"))
	ended := intake.Unavailable(errors.New("FATAL: terminating connection due to idle-in-transaction timeout (SQLSTATE 25P03)"))

	w.Failed(down)
	log.Error("worker: settle failed", "err", down)
	log.Error("worker: settle failed", "err", down) // held back
	clock.Advance(outage.Quiet)
	w.Reached()
	clock.Advance(outage.Tail - time.Millisecond)
	log.Error("worker: settle failed", "err", ended)                   // the tail: info
	log.Error("router: claim failed", "err", ended)                    // not logged in the outage
	log.Error("worker: settle failed", "err", errors.New("a bad row")) // not unavailable
	clock.Advance(time.Millisecond)
	log.Error("worker: settle failed", "err", ended) // past Tail

	type line struct{ Level, Msg, AfterOutage string }
	var got []line
	for _, r := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var l struct {
			Level, Msg  string
			AfterOutage string `json:"after_outage"`
		}
		if err := json.Unmarshal([]byte(r), &l); err != nil {
			t.Fatal(err)
		}
		got = append(got, line{l.Level, l.Msg, l.AfterOutage})
	}
	want := []line{
		{"ERROR", "postgres: unreachable; what fails because of it is logged once per kind until it is back", ""},
		{"ERROR", "worker: settle failed", ""},
		{"INFO", "postgres: reachable again", ""},
		{"INFO", "worker: settle failed", "postgres"},
		{"ERROR", "router: claim failed", ""},
		{"ERROR", "worker: settle failed", ""},
		{"ERROR", "worker: settle failed", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("logged %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	// A log that leaves info out leaves the tail out with it.
	b.Reset()
	quiet := slog.New(w.Handler(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn})))
	w.Failed(down)
	quiet.Error("worker: settle failed", "err", down)
	clock.Advance(outage.Quiet)
	w.Reached()
	quiet.Error("worker: settle failed", "err", ended)
	if n := strings.Count(b.String(), "worker: settle failed"); n != 1 {
		t.Errorf("a warn-level log printed the settle failure %d times over an outage and its tail, want 1:\n%s", n, b.String())
	}
}
