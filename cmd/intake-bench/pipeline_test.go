package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestParseFlagsDBAndPipelineNeedSpawn(t *testing.T) {
	for _, args := range [][]string{
		{"--url", "http://x", "--token", "t", "--pipeline"},
		{"--url", "http://x", "--token", "t", "--db", "postgres://h/db"},
	} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "need --spawn") {
			t.Errorf("%q: err %v, want one saying they need --spawn", args, err)
		}
	}
	o, err := parseFlags([]string{"--spawn", "--pipeline", "--db", "postgres://h/db"})
	if err != nil || !o.pipeline || o.db != "postgres://h/db" {
		t.Errorf("--spawn --pipeline --db: %+v, %v", o, err)
	}
}

// A wrong provider is refused before any load runs, not after the baseline.
func TestParseFlagsRejectsAnUnknownProvider(t *testing.T) {
	if _, err := parseFlags([]string{"--spawn", "--provider", "stripe"}); err == nil || !strings.Contains(err.Error(), "stripe") {
		t.Errorf("err %v, want one naming the provider", err)
	}
}

func TestToLastDeliveryCountsFromTheFirstRequestToTheLastDelivery(t *testing.T) {
	t0 := time.Now()
	r := &Run{Acked: 100, Seconds: 2, started: t0}
	r.setToLastDelivery(t0.Add(4 * time.Second))
	if r.ToLastDeliverySeconds != 4 || r.ToLastDeliveryPerSec != 25 {
		t.Errorf("delivered until 4 s: %g s, %g/s; want 4 s, 25/s", r.ToLastDeliverySeconds, r.ToLastDeliveryPerSec)
	}
	r.setToLastDelivery(t0.Add(time.Second))
	if r.ToLastDeliverySeconds != 2 || r.ToLastDeliveryPerSec != 50 {
		t.Errorf("last delivery before the load ended: %g s, %g/s; want the load's 2 s, 50/s", r.ToLastDeliverySeconds, r.ToLastDeliveryPerSec)
	}
}

func TestBenchPipelineRatesIntakeToItsLastDeliveryAgainstBare(t *testing.T) {
	srv := fakeIntake(t, true)
	o := options{url: srv.URL, token: "t", provider: "github", clients: 2, duration: 200 * time.Millisecond,
		bodyBytes: 256, pipeline: true, consumerAddr: "127.0.0.1:0"}
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	in := r.Intake
	if r.Baseline == nil || r.Baseline.Acked == 0 {
		t.Fatalf("baseline %+v: --pipeline runs bare HTTP first", r.Baseline)
	}
	if in.Target != "sqlite" || in.E2E == nil || in.E2E.Delivered != in.Acked || in.Acked == 0 {
		t.Fatalf("intake %+v, e2e %+v: want the sqlite stage with every acked webhook delivered", in, in.E2E)
	}
	if in.ToLastDeliverySeconds < in.Seconds || in.ToLastDeliveryPerSec != float64(in.Acked)/in.ToLastDeliverySeconds {
		t.Errorf("to last delivery %g s, %g/s; load %g s, %d acked", in.ToLastDeliverySeconds, in.ToLastDeliveryPerSec, in.Seconds, in.Acked)
	}
	if r.Ratio != in.ToLastDeliveryPerSec/r.Baseline.AckedPerSec {
		t.Errorf("ratio %g, want %g / %g", r.Ratio, in.ToLastDeliveryPerSec, r.Baseline.AckedPerSec)
	}
	if r.Postgres != nil || r.PostgresRatio != 0 {
		t.Errorf("no --db, yet postgres %+v, ratio %g", r.Postgres, r.PostgresRatio)
	}
}

func TestPipelineReportTextShowsEveryTargetAndBothRatios(t *testing.T) {
	e2e := func(p50, p99 float64, missing, dups int) *E2E {
		return &E2E{Delivered: 1, Missing: missing, Duplicates: dups, Latency: &Latency{P50: p50, P99: p99}}
	}
	r := &Report{
		Mode: "closed", Clients: 64, BodyBytes: 2048, Duration: "15s", Provider: "github", Pipeline: true,
		Baseline: &Run{Target: "baseline", Acked: 500000, AckedPerSec: 34252, Seconds: 15, Ack: Latency{P50: 1.5, P99: 8}},
		Intake: &Run{Target: "sqlite", Acked: 40000, ToLastDeliveryPerSec: 2476, ToLastDeliverySeconds: 16.2,
			Ack: Latency{P50: 15.5, P99: 37.25}, PeakRSSBytes: 60 << 20, E2E: e2e(784.9, 1117.2, 0, 0)},
		Postgres: &Run{Target: "postgres", Acked: 15000, ToLastDeliveryPerSec: 973, ToLastDeliverySeconds: 15.4,
			Ack: Latency{P50: 37.5, P99: 78.2}, PeakRSSBytes: 49 << 20, E2E: e2e(1081.3, 1840.2, 2, 3), Errors: map[string]int{"503": 4}},
		Ratio: 0.0723, PostgresRatio: 0.393, PostgresBareRatio: 0.0284,
	}
	var out bytes.Buffer
	r.writeText(&out)
	for _, want := range []string{
		"pipeline: closed loop, 64 clients, 2048-byte bodies, 15s per target",
		"bare  500000    34252",
		"sqlite   40000     2476     16.2       15.50       37.25            784.90           1117.20        0           0          60.0",
		"postgres   15000      973     15.4       37.50       78.20           1081.30           1840.20        2           3          49.0   503:4",
		"SQLite end to end / bare: 0.072",
		"PostgreSQL end to end / SQLite end to end: 0.39",
		"PostgreSQL end to end / bare: 0.028",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	r.Postgres, r.PostgresRatio = nil, 0
	out.Reset()
	r.writeText(&out)
	if !strings.Contains(out.String(), "PostgreSQL: not measured (no --db)") {
		t.Errorf("without PostgreSQL the report does not say so:\n%s", out.String())
	}
}

func TestFreshDatabaseIsCreatedEmptyAndDropped(t *testing.T) {
	server := pgtest.Database(t) // any database of the server will do to create another
	ctx := context.Background()
	dbURL, drop, err := freshDatabase(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		drop()
		t.Fatalf("connecting to the fresh database: %v", err)
	}
	var tables int
	err = c.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables)
	c.Close(ctx)
	if err != nil || tables != 0 {
		t.Errorf("fresh database has %d tables (%v), want none", tables, err)
	}
	if err := drop(); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if c, err := pgx.Connect(ctx, dbURL); err == nil {
		c.Close(ctx)
		t.Error("the database is still there after drop")
	}
}

func TestFreshDatabaseRefusesAURLThatIsNotPostgres(t *testing.T) {
	if _, _, err := freshDatabase(context.Background(), "mysql://h/db"); err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Errorf("err %v, want one asking for a postgres:// URL", err)
	}
}

func TestReportTextShowsTheE2ERateToTheLastDelivery(t *testing.T) {
	r := &Report{Mode: "open", Rate: 1000, Clients: 64, Intake: &Run{Target: "intake", Errors: map[string]int{},
		ToLastDeliveryPerSec: 919.4, ToLastDeliverySeconds: 16.31, E2E: &E2E{Delivered: 15001, Latency: &Latency{P50: 1232}}}}
	var out bytes.Buffer
	r.writeText(&out)
	if want := "acked webhooks / (first request → last delivery): 919/s over 16.3 s"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}

func TestBenchStopsBeforeTheNextStoreOnceInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := options{url: "http://127.0.0.1:1", token: "t", provider: "none", clients: 1, duration: time.Second, consumerAddr: "127.0.0.1:0"}
	if _, err := bench(ctx, o, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled before any server is set up", err)
	}
}
