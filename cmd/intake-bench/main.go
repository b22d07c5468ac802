// Command intake-bench measures intake under load. It creates its own org,
// connection and endpoint through the admin API, posts signed webhooks for a
// duration (as fast as N keep-alive clients can, or at a fixed rate), and
// reports acknowledged requests/s, ack latency, errors by status and, when it
// started the server itself, the server's peak RSS. With --baseline it first
// runs the same load against a bare net/http handler, so one run shows intake
// next to the machine's own HTTP ceiling. With --pipeline it measures the
// whole pipeline, from the first request to the last delivery, on bare
// HTTP, SQLite and PostgreSQL in one run. With --noisy it measures one
// org's deliveries while another org attacks the server. With --faults it
// runs the fault campaign at full size and prints docs/reliability.md's
// rows. With --replicate it measures the embedded store replicated (none,
// async, sync), the replication lag and a restore. See
// docs/performance.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/intakehq/intake/internal/faults"
)

type options struct {
	url, token   string
	spawn        bool
	intakeBin    string
	provider     string
	clients      int
	rate         float64
	duration     time.Duration
	bodyBytes    int
	baseline     bool
	json         bool
	e2e          bool
	consumerAddr string
	consumer     string // a broker url the measured consumer is, "" for HTTP
	rules        bool
	db           string
	pipeline     bool
	// Consumer controls, with --e2e.
	pausedConsumer bool
	consumerRate   float64
	processes      int
	// The noisy-neighbour benchmark.
	noisy          bool
	attacks        []string
	notifyInterval time.Duration
	noisyBodyBytes int
	noisyBodies    int
	catalogPairs   int
	// The fault campaign.
	faults     bool
	faultNames map[string]bool
	// The replication benchmark.
	replicate        string
	replicateRounds  int
	lagRate          float64
	restoreBytes     int64
	restoreBodyBytes int
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("intake-bench", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "", "base URL of a running intake (with --token)")
	fs.StringVar(&o.token, "token", os.Getenv("INTAKE_TOKEN"), "staff token of the server at --url (default $INTAKE_TOKEN)")
	fs.BoolVar(&o.spawn, "spawn", false, "start `intake serve` from --intake-bin on a temporary data directory")
	fs.StringVar(&o.intakeBin, "intake-bin", "intake", "the intake binary --spawn starts (go build -o /tmp/intake ./cmd/intake)")
	fs.StringVar(&o.provider, "provider", "github", "connection provider: github (HMAC-signed), none, or mix (a connection per provider for "+strings.Join(mixProviders, ", ")+", each webhook a fresh signed sample of the next in turn, about 220 bytes; --body-bytes does not apply)")
	fs.IntVar(&o.clients, "clients", 64, "keep-alive clients (with --rate: the most requests in flight)")
	fs.Float64Var(&o.rate, "rate", 0, "webhooks per second (open loop); 0: as fast as the clients can (closed loop)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each run sends")
	fs.IntVar(&o.bodyBytes, "body-bytes", 2048, "size of each JSON body")
	fs.BoolVar(&o.baseline, "baseline", false, "first run the same load against a bare net/http 202 handler in this process")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON on stdout")
	fs.BoolVar(&o.e2e, "e2e", false, "measure end-to-end latency through a local consumer (needs consumer routing)")
	fs.StringVar(&o.consumerAddr, "consumer-addr", "127.0.0.1:0", "where the --e2e consumer listens; intake must reach it")
	fs.StringVar(&o.consumer, "consumer", "", "with --e2e: deliver to this broker instead of the HTTP consumer, and count what arrives there: nats://host:4222/<subject>[?stream=S] (the bench makes the stream, or uses S when it exists) or kafka://host:9092/<topic> (kafka://kfake/<topic>: franz-go's fake cluster, started in this process); {type} is the bench's event type")
	fs.BoolVar(&o.rules, "rules", false, "with --e2e: give the consumer a CEL filter and a 10-line JavaScript transform that every event passes through")
	fs.StringVar(&o.db, "db", "", "with --spawn: the PostgreSQL server (postgres:// URL) to store in, on a fresh database the bench creates and drops; empty: the embedded SQLite store")
	fs.BoolVar(&o.pipeline, "pipeline", false, "with --spawn: the whole pipeline (--baseline and --e2e) on bare HTTP, then SQLite, then PostgreSQL at --db, each from the first request to the last delivery")
	fs.BoolVar(&o.pausedConsumer, "paused-consumer", false, "with --e2e: also register a second consumer of the same events, paused, so its routes are held while the measured one is served")
	fs.Float64Var(&o.consumerRate, "consumer-rate", 0, "with --e2e: give the measured consumer this rate_per_sec and report the rate it is delivered at")
	fs.IntVar(&o.processes, "processes", 1, "with --spawn and --db: start this many servers on the one database and send the load round-robin across them")
	fs.BoolVar(&o.noisy, "noisy", false, "the noisy-neighbour benchmark: org A's webhook-to-delivery latency alone, then while org B runs each attack, each on a server it spawns (--rate default 20, --duration per phase)")
	fs.Func("attacks", "with --noisy: a comma-separated subset of "+attackNames()+" (default all)", func(v string) error {
		for name := range strings.SplitSeq(v, ",") {
			if !strings.Contains(","+attackNames()+",", ","+name+",") {
				return fmt.Errorf("unknown attack %q: want some of %s", name, attackNames())
			}
			o.attacks = append(o.attacks, name)
		}
		return nil
	})
	fs.DurationVar(&o.notifyInterval, "notify-interval", time.Second, "with --noisy: the spawned servers' --notify-interval")
	fs.IntVar(&o.noisyBodyBytes, "noisy-body-bytes", 24<<20, "with --noisy: the size of each body of the big-body attack")
	fs.IntVar(&o.catalogPairs, "catalog-pairs", 0, "with --spawn: this many pairs of runs with the event-type catalog off and on (INTAKE_CATALOG), alternating which goes first, and their ratios")
	fs.IntVar(&o.noisyBodies, "noisy-bodies", 3, "with --noisy: how many bodies the big-body attack posts, one at a time")
	fs.BoolVar(&o.faults, "faults", false, "the fault campaign at full size (docs/reliability.md): each network fault on the link to an HTTP consumer on SQLite and, with --db, on the link to PostgreSQL and the consumer's on PostgreSQL, each on a server it spawns; prints the table's rows")
	fs.Func("fault", "with --faults: run only this fault (repeatable): one of "+faultNames(), func(v string) error {
		if _, ok := faults.Find(v); !ok {
			return fmt.Errorf("unknown fault %q: want one of %s", v, faultNames())
		}
		if o.faultNames == nil {
			o.faultNames = map[string]bool{}
		}
		o.faultNames[v] = true
		return nil
	})
	fs.StringVar(&o.replicate, "replicate", "", "with --spawn: the replication benchmark, each server shipping to a location of its own below this replica URL (s3://BUCKET/PATH?endpoint=…&region=…, credentials from the AWS variables, or file:///PATH): acked/s and ack p99 with no replication, --replicate and --replicate-sync in --replicate-rounds rounds of rotating order, then the lag at --lag-rate, then a restore of --restore-bytes")
	fs.IntVar(&o.replicateRounds, "replicate-rounds", defaultReplicateRounds, "with --replicate: rounds of none, async and sync")
	fs.Float64Var(&o.lagRate, "lag-rate", defaultLagRate, "with --replicate: webhooks per second the replication lag is read under, from /readyz every 50 ms, for --duration (0: not measured)")
	fs.Int64Var(&o.restoreBytes, "restore-bytes", 0, "with --replicate: fill a replicated store to this many bytes and time intake restore of it (0: not measured; 1073741824 is 1 GiB)")
	fs.IntVar(&o.restoreBodyBytes, "restore-body-bytes", 64<<10, "with --restore-bytes: the size of each body filling the store (kept in the database: the spawned server's --blob-threshold is above it)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.faults && o.url == "" {
		o.spawn = true // it starts a server per fault
	}
	if o.noisy && o.url == "" {
		o.spawn = true // it starts a server per attack
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.spawn == (o.url != ""):
		return o, errors.New("give exactly one of --url or --spawn")
	case o.url != "" && o.token == "":
		return o, errors.New("--url needs --token (or $INTAKE_TOKEN): the staff token")
	case o.clients < 1 || o.duration <= 0 || o.bodyBytes < 0 || o.rate < 0:
		return o, errors.New("--clients, --duration must be positive; --body-bytes, --rate not negative")
	case o.provider != "github" && o.provider != "none" && o.provider != "mix":
		return o, fmt.Errorf("--provider %q: want github, none or mix", o.provider)
	case o.provider == "mix" && (o.rules || strings.Contains(o.consumer, "{type}") || o.noisy || o.catalogPairs > 0):
		return o, errors.New("--provider mix: not with --rules (its filter reads GitHub's headers), a --consumer naming {type} (the mix has many), --noisy or --catalog-pairs")
	case (o.db != "" || o.pipeline) && !o.spawn:
		return o, errors.New("--db and --pipeline need --spawn: the bench starts each server on its own store")
	case (o.pausedConsumer || o.consumerRate != 0) && !o.e2e:
		return o, errors.New("--paused-consumer and --consumer-rate need --e2e: they are about the consumer's deliveries")
	case o.consumer != "" && !o.e2e:
		return o, errors.New("--consumer needs --e2e: it is where the measured deliveries go")
	case checkConsumerURL(o.consumer) != nil:
		return o, checkConsumerURL(o.consumer)
	case o.consumerRate < 0:
		return o, errors.New("--consumer-rate must not be negative")
	case o.processes < 1:
		return o, errors.New("--processes must be at least 1")
	case o.processes > 1 && (!o.spawn || o.db == "" || o.pipeline):
		return o, errors.New("--processes needs --spawn and --db, without --pipeline: the servers share one PostgreSQL database")
	case o.noisy && (o.url != "" || o.pipeline || o.e2e || o.baseline || o.processes > 1):
		return o, errors.New("--noisy spawns its own servers: not with --url, --pipeline, --e2e, --baseline or --processes")
	case o.catalogPairs < 0 || o.catalogPairs > 0 && (!o.spawn || o.pipeline || o.noisy || o.baseline):
		return o, errors.New("--catalog-pairs needs --spawn, without --pipeline, --noisy or --baseline: it spawns each server itself")
	case o.faults && (o.url != "" || o.pipeline || o.e2e || o.baseline || o.noisy || o.processes > 1 || o.catalogPairs > 0):
		return o, errors.New("--faults spawns its own servers: not with --url, --pipeline, --e2e, --baseline, --noisy, --processes or --catalog-pairs")
	case len(o.faultNames) > 0 && !o.faults:
		return o, errors.New("--fault needs --faults")
	case checkReplicateFlags(o) != nil:
		return o, checkReplicateFlags(o)
	case o.noisyBodyBytes < 1 || o.noisyBodyBytes > 63<<20 || o.noisyBodies < 1 || o.notifyInterval <= 0:
		return o, errors.New("--noisy-body-bytes must be between 1 and 63 MiB; --noisy-bodies and --notify-interval positive")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "intake-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := func() (report, error) { return bench(ctx, o, os.Stderr) }
	if o.noisy {
		run = func() (report, error) { return noisyBench(ctx, o, os.Stderr) }
	}
	if o.catalogPairs > 0 {
		run = func() (report, error) { return catalogBench(ctx, o, os.Stderr) }
	}
	if o.faults {
		run = func() (report, error) { return faultsBench(ctx, o, os.Stderr) }
	}
	if o.replicate != "" {
		run = func() (report, error) { return replicateBench(ctx, o, os.Stderr) }
	}
	r, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "intake-bench:", err)
		os.Exit(1)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
		return
	}
	r.writeText(os.Stdout)
}

// report is what a measurement prints: as text, or encoded as JSON.
type report interface{ writeText(io.Writer) }

// bench runs the baseline if asked, then intake on each store asked.
func bench(ctx context.Context, o options, progress io.Writer) (*Report, error) {
	r := &Report{Mode: "closed", Clients: o.clients, BodyBytes: o.bodyBytes, Duration: o.duration.String(), Provider: o.provider, Pipeline: o.pipeline}
	if o.rate > 0 {
		r.Mode, r.Rate = "open", o.rate
	}
	if o.pipeline {
		o.baseline, o.e2e = true, true
	}
	l := load{Clients: o.clients, Rate: o.rate, Duration: o.duration, BodyBytes: o.bodyBytes}
	if o.baseline {
		bl, err := startBaseline()
		if err != nil {
			return nil, err
		}
		t, err := baselineTarget(o.provider, bl.url, l)
		if err != nil {
			bl.close()
			return nil, err
		}
		r.Baseline = run(ctx, t, l, nil, progress)
		bl.close()
	}
	stages := []stage{{name: "intake", db: o.db}}
	if o.pipeline {
		stages = []stage{{name: "sqlite"}}
		if o.db != "" {
			stages = append(stages, stage{name: "postgres", db: o.db})
		}
	}
	for i, st := range stages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, err := measure(ctx, o, l, st, progress)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.name, err)
		}
		if i == 0 {
			r.Intake = got
		} else {
			r.Postgres = got
		}
	}
	if r.Baseline != nil && r.Baseline.AckedPerSec > 0 {
		intake := r.Intake.AckedPerSec
		if o.pipeline {
			intake = r.Intake.ToLastDeliveryPerSec
		}
		r.Ratio = intake / r.Baseline.AckedPerSec
	}
	if r.Postgres != nil && r.Intake.ToLastDeliveryPerSec > 0 {
		r.PostgresRatio = r.Postgres.ToLastDeliveryPerSec / r.Intake.ToLastDeliveryPerSec
	}
	if r.Postgres != nil && r.Baseline != nil && r.Baseline.AckedPerSec > 0 {
		r.PostgresBareRatio = r.Postgres.ToLastDeliveryPerSec / r.Baseline.AckedPerSec
	}
	return r, nil
}

// stage is one intake server a run measures: its name in the report, the
// PostgreSQL server it stores on ("" is the embedded SQLite store) and
// what its environment adds (a setting such as INTAKE_CATALOG).
type stage struct {
	name, db string
	env      []string
	// watch, when set, is started on the (first) spawned server once it
	// is set up, just before the load; the load's end calls what it
	// returns.
	watch func(*server) (stop func())
}

// measure sets intake up (spawning it on st's store when asked, o.processes
// servers on one database), runs the load against it and, with --e2e,
// waits for the last delivery.
func measure(ctx context.Context, o options, l load, st stage, progress io.Writer) (*Run, error) {
	bases, tok := []string{o.url}, o.token
	var srvs []*server
	if o.spawn {
		tok = rand.Text()
		env, dropDB, err := serverEnv(ctx, st.db, progress)
		if err != nil {
			return nil, err
		}
		if o.bodyBytes > 10<<20 {
			env = append(env, fmt.Sprint("INTAKE_MAX_BODY_BYTES=", o.bodyBytes)) // the server's default cap is 10 MiB
		}
		defer dropDB() // deferred first, so it runs after the servers have stopped
		defer func() { stopAll(srvs) }()
		bases = nil
		// One after another: the first migrates the database.
		for range o.processes {
			srv, err := spawn(o.intakeBin, tok, append(env, st.env...)...)
			if err != nil {
				return nil, err
			}
			srvs = append(srvs, srv)
			bases = append(bases, srv.url)
		}
	}
	a := &admin{base: strings.TrimRight(bases[0], "/"), token: tok, http: &http.Client{Timeout: 30 * time.Second}}
	b, err := setUp(a, o.provider, o.bodyBytes)
	if err != nil {
		return nil, fmt.Errorf("setting up: %w", err)
	}
	t := target{name: st.name, sign: b.sign}
	for _, base := range bases {
		t.urls = append(t.urls, strings.TrimRight(base, "/")+"/webhooks/"+b.token)
	}
	if b.routes != nil {
		mix, err := newMixer(b.routes, mixAhead(load{Clients: o.clients, Rate: o.rate, Duration: o.duration}), mixSpan(o.duration), time.Now)
		if err != nil {
			return nil, err
		}
		t.mix, t.urls = mix, nil
		for _, base := range bases {
			t.urls = append(t.urls, strings.TrimRight(base, "/"))
		}
	}

	var track *tracker
	var e2e *E2E
	var paused *consumer
	var pausedID string
	var consumerKind string
	if o.e2e {
		track = newTracker()
		c, err := startSink(ctx, o.consumer, o.consumerAddr, b.eventType, track)
		if err != nil {
			return nil, fmt.Errorf("the consumer: %w", err)
		}
		defer c.close()
		consumerKind = c.kind
		fmt.Fprintf(progress, "consumer: %s at %s\n", c.kind, c.url)
		id, err := registerConsumer(a, b, "intake-bench", c.url, o.rules)
		switch {
		case errors.Is(err, errNoConsumers):
			fmt.Fprintln(progress, "end-to-end skipped:", err)
			track, e2e = nil, &E2E{Skipped: err.Error()}
		case err != nil:
			return nil, fmt.Errorf("registering the consumer: %w", err)
		}
		if track != nil && o.consumerRate > 0 {
			if err := limitConsumer(a, id, o.consumerRate); err != nil {
				return nil, fmt.Errorf("limiting the consumer: %w", err)
			}
		}
		if track != nil && o.pausedConsumer {
			// Its own listener, so a delivery it should not get shows.
			if paused, err = startConsumer(o.consumerAddr, newTracker()); err != nil {
				return nil, err
			}
			defer paused.close()
			if pausedID, err = registerConsumer(a, b, "intake-bench-paused", paused.url, o.rules); err != nil {
				return nil, fmt.Errorf("registering the paused consumer: %w", err)
			}
			if err := pauseConsumer(a, pausedID); err != nil {
				return nil, fmt.Errorf("pausing the second consumer: %w", err)
			}
		}
	}

	var stopWatch func()
	if st.watch != nil && len(srvs) > 0 {
		stopWatch = st.watch(srvs[0])
	}
	got := run(ctx, t, l, track, progress)
	if stopWatch != nil {
		stopWatch()
	}
	got.Processes = len(srvs)
	if track != nil {
		fmt.Fprintln(progress, "waiting for the consumer to get every acked webhook (gives up after 10s without one)")
		track.wait(10 * time.Second)
		e2e = track.result()
		e2e.Consumer = consumerKind
		if _, last := track.pending(); e2e.Delivered > 0 {
			got.setToLastDelivery(last)
		}
		if o.consumerRate > 0 {
			e2e.Rate = track.deliveryRate(o.consumerRate)
		}
		if paused != nil {
			held, err := consumerHeld(a, pausedID)
			if err != nil {
				return nil, fmt.Errorf("the paused consumer's health: %w", err)
			}
			e2e.Paused = &PausedConsumer{Held: held, Delivered: int(paused.calls.Load())}
		}
	}
	got.E2E = e2e
	for _, srv := range srvs {
		rss, err := srv.peakRSS()
		if err != nil {
			return nil, fmt.Errorf("peak RSS: %w", err)
		}
		got.PeakRSSBytes = max(got.PeakRSSBytes, rss)
		cpu, err := srv.cpuSeconds()
		if err != nil {
			return nil, fmt.Errorf("CPU time: %w", err)
		}
		got.ServerCPUSeconds += cpu
	}
	return got, nil
}

// baselineTarget signs the baseline's load as the provider's would be, so
// both targets pay the same client work.
func baselineTarget(provider, url string, l load) (target, error) {
	t := target{name: "baseline", urls: []string{url}}
	switch provider {
	case "github":
		t.sign = githubSigner([]byte(rand.Text()))
	case "mix":
		var routes []mixRoute
		for _, p := range mixProviders {
			routes = append(routes, mixRoute{provider: p, secret: mixSecret(p)})
		}
		mix, err := newMixer(routes, mixAhead(l), mixSpan(l.Duration), time.Now)
		if err != nil {
			return target{}, err
		}
		t.mix = mix
	}
	return t, nil
}
