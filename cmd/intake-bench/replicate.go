package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/redact"
)

// ReplicateReport compares intake without replication, with --replicate
// (async) and with --replicate-sync, in rounds whose order rotates, each
// server spawned alike but for its replication and shipping to a location
// of its own under --replicate; then the replication lag under a fixed
// rate, and the time to restore a store of a given size.
type ReplicateReport struct {
	Replica   string           `json:"replica"` // --replicate, without its query
	Clients   int              `json:"clients"`
	BodyBytes int              `json:"body_bytes"`
	Duration  string           `json:"duration"`
	Rounds    []ReplicateRound `json:"rounds"`
	// Medians over the rounds: acked/s with --replicate and with
	// --replicate-sync over acked/s without, and the ack p99 of each.
	AsyncRatio float64     `json:"async_ratio"`
	SyncRatio  float64     `json:"sync_ratio"`
	NoneP99    float64     `json:"none_p99_ms"`
	AsyncP99   float64     `json:"async_p99_ms"`
	SyncP99    float64     `json:"sync_p99_ms"`
	Lag        *LagRun     `json:"lag,omitempty"`
	Restore    *RestoreRun `json:"restore,omitempty"`
	// LoadAverage is the machine's 1-minute load average when the bench
	// began and when it ended.
	LoadAverage [2]float64 `json:"load_average"`
}

// ReplicateRound is one run without replication, one with --replicate and
// one with --replicate-sync.
type ReplicateRound struct {
	Order      []string `json:"order"`
	None       *Run     `json:"none"`
	Async      *Run     `json:"async"`
	Sync       *Run     `json:"sync"`
	AsyncRatio float64  `json:"async_ratio"`
	SyncRatio  float64  `json:"sync_ratio"`
	// Load is the 1-minute load average as each run began, in Order.
	Load []float64 `json:"load_average"`
}

// LagRun is the replication lag /readyz reported, read every 50 ms while
// the server took webhooks at a fixed rate with --replicate: how long ago
// the replica last held every commit made by then.
type LagRun struct {
	Run     *Run    `json:"run"`
	Samples int     `json:"samples"`
	Lag     Latency `json:"lag_ms"`
	Load    float64 `json:"load_average"`
}

// RestoreRun is `intake restore` of a store filled to about Bytes, timed.
type RestoreRun struct {
	Webhooks      int     `json:"webhooks"`        // acked while filling
	FillSeconds   float64 `json:"fill_seconds"`    // filling, to the last sync
	StoreBytes    int64   `json:"store_bytes"`     // the restored database file
	Seconds       float64 `json:"seconds"`         // intake restore, start to exit
	MBPerSec      float64 `json:"mb_per_sec"`      // StoreBytes over Seconds, in MB (10^6)
	Load          float64 `json:"load_average"`    // as the restore began
	ReplicaObject int     `json:"replica_objects"` // objects in the replica then
}

const (
	replNone  = "none"
	replAsync = "async"
	replSync  = "sync"
)

// replicaBelow is the replica URL u with name appended to its path, so
// that each spawned server ships to a location of its own (a replica
// holds one store).
func replicaBelow(u, name string) string {
	base, query, ok := strings.Cut(u, "?")
	base = strings.TrimRight(base, "/") + "/" + name
	if ok {
		base += "?" + query
	}
	return base
}

// replicateStage is a server measured with replication mode, shipping to
// a location of its own under u.
func replicateStage(mode, u string) (stage, string) {
	st := stage{name: mode, env: []string{"INTAKE_REPLICATE=", "INTAKE_REPLICATE_SYNC=false"}}
	if mode == replNone {
		return st, ""
	}
	at := replicaBelow(u, "bench-"+strings.ToLower(rand.Text()[:10]))
	st.env = []string{"INTAKE_REPLICATE=" + at, "INTAKE_REPLICATE_SYNC=" + strconv.FormatBool(mode == replSync)}
	return st, at
}

// replicateBench runs the replication benchmark of o: o.replicateRounds
// rounds of none, async and sync; the lag at o.lagRate; the restore of a
// store of o.restoreBytes.
func replicateBench(ctx context.Context, o options, progress io.Writer) (*ReplicateReport, error) {
	r := &ReplicateReport{Replica: redactURL(o.replicate), Clients: o.clients, BodyBytes: o.bodyBytes, Duration: o.duration.String()}
	r.LoadAverage[0] = loadAverage()
	var made []string // the replicas the bench shipped to, removed at its end
	defer func() { removeReplicas(made, progress) }()
	l := load{Clients: o.clients, Duration: o.duration, BodyBytes: o.bodyBytes}
	modes := []string{replNone, replAsync, replSync}
	for i := range o.replicateRounds {
		var round ReplicateRound
		for j := range modes {
			mode := modes[(i+j)%len(modes)]
			st, at := replicateStage(mode, o.replicate)
			if at != "" {
				made = append(made, at)
			}
			round.Order = append(round.Order, mode)
			round.Load = append(round.Load, loadAverage())
			fmt.Fprintf(progress, "round %d: %s\n", i+1, mode)
			got, err := measure(ctx, o, l, st, progress)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", i+1, mode, err)
			}
			switch mode {
			case replNone:
				round.None = got
			case replAsync:
				round.Async = got
			case replSync:
				round.Sync = got
			}
		}
		if round.None.AckedPerSec > 0 {
			round.AsyncRatio = round.Async.AckedPerSec / round.None.AckedPerSec
			round.SyncRatio = round.Sync.AckedPerSec / round.None.AckedPerSec
		}
		fmt.Fprintf(progress, "round %d: acked/s none %.0f async %.0f (%.3f) sync %.0f (%.3f); p99 ms %.1f %.1f %.1f\n", i+1,
			round.None.AckedPerSec, round.Async.AckedPerSec, round.AsyncRatio, round.Sync.AckedPerSec, round.SyncRatio,
			round.None.Ack.P99, round.Async.Ack.P99, round.Sync.Ack.P99)
		r.Rounds = append(r.Rounds, round)
	}
	var asyncR, syncR, noneP, asyncP, syncP []float64
	for _, rd := range r.Rounds {
		asyncR, syncR = append(asyncR, rd.AsyncRatio), append(syncR, rd.SyncRatio)
		noneP, asyncP, syncP = append(noneP, rd.None.Ack.P99), append(asyncP, rd.Async.Ack.P99), append(syncP, rd.Sync.Ack.P99)
	}
	r.AsyncRatio, r.SyncRatio = median(asyncR), median(syncR)
	r.NoneP99, r.AsyncP99, r.SyncP99 = median(noneP), median(asyncP), median(syncP)

	if o.lagRate > 0 {
		lag, at, err := lagBench(ctx, o, progress)
		if at != "" {
			made = append(made, at)
		}
		if err != nil {
			return nil, fmt.Errorf("the lag at %g/s: %w", o.lagRate, err)
		}
		r.Lag = lag
	}
	if o.restoreBytes > 0 {
		rs, at, err := restoreBench(ctx, o, progress)
		if at != "" {
			made = append(made, at)
		}
		if err != nil {
			return nil, fmt.Errorf("the restore of %d bytes: %w", o.restoreBytes, err)
		}
		r.Restore = rs
	}
	r.LoadAverage[1] = loadAverage()
	return r, nil
}

// lagBench posts o.lagRate webhooks a second for o.duration to a server
// replicating without waiting, reading the lag from /readyz every 50 ms.
func lagBench(ctx context.Context, o options, progress io.Writer) (*LagRun, string, error) {
	st, at := replicateStage(replAsync, o.replicate)
	st.name = "lag"
	var lags []time.Duration
	var lagErr error
	st.watch = func(s *server) func() {
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			lags, lagErr = sampleLag(wctx, s.url, 50*time.Millisecond)
		}()
		return func() { stop(); <-done }
	}
	out := &LagRun{Load: loadAverage()}
	fmt.Fprintf(progress, "the lag at %g webhooks/s with --replicate\n", o.lagRate)
	got, err := measure(ctx, o, load{Clients: o.clients, Rate: o.lagRate, Duration: o.duration, BodyBytes: o.bodyBytes}, st, progress)
	if err != nil {
		return nil, at, err
	}
	if lagErr != nil {
		return nil, at, lagErr
	}
	out.Run, out.Samples, out.Lag = got, len(lags), summarize(lags)
	return out, at, nil
}

// lagLine is /readyz's line about the replica.
var lagLine = regexp.MustCompile(`(?m)^replica[^:]*: lag (\S+),`)

// sampleLag reads the replica's lag from base's /readyz every every until
// ctx ends.
func sampleLag(ctx context.Context, base string, every time.Duration) ([]time.Duration, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var lags []time.Duration
	for {
		select {
		case <-ctx.Done():
			return lags, nil
		case <-tick.C:
		}
		lag, err := readLag(ctx, c, base)
		if err != nil {
			if ctx.Err() != nil {
				return lags, nil
			}
			return lags, err
		}
		lags = append(lags, lag)
	}
}

// readLag is the lag base's /readyz reports.
func readLag(ctx context.Context, c *http.Client, base string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return 0, err
	}
	m := lagLine.FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("/readyz tells no replica lag: %q", body)
	}
	return time.ParseDuration(string(m[1]))
}

// restoreBench fills a server replicating without waiting until its
// database holds o.restoreBytes, lets it ship the rest and stop, and
// times `intake restore` of its replica into a new data directory.
func restoreBench(ctx context.Context, o options, progress io.Writer) (*RestoreRun, string, error) {
	st, at := replicateStage(replAsync, o.replicate)
	st.name = "fill"
	// Bodies below the blob threshold, so they fill the database.
	st.env = append(st.env, "INTAKE_BLOB_THRESHOLD="+strconv.Itoa(o.restoreBodyBytes+1))
	fill, full := context.WithCancel(ctx)
	defer full()
	st.watch = func(s *server) func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-fill.Done():
					return
				case <-tick.C:
				}
				if dbBytes(s.data) >= o.restoreBytes {
					full()
					return
				}
			}
		}()
		// Once full, the server stops (measure stops it): a drain ships
		// the rest to the replica before it exits.
		return func() { full(); <-done }
	}
	fmt.Fprintf(progress, "filling a store to %d bytes with %d-byte bodies, replicated\n", o.restoreBytes, o.restoreBodyBytes)
	begun := time.Now()
	// A load that ends when the database is full (or after an hour).
	got, err := measure(fill, o, load{Clients: o.clients, Duration: time.Hour, BodyBytes: o.restoreBodyBytes}, st, progress)
	if err != nil {
		return nil, at, err
	}
	if ctx.Err() != nil {
		return nil, at, ctx.Err()
	}
	out := &RestoreRun{Webhooks: got.Acked, FillSeconds: time.Since(begun).Seconds()}
	if n, err := countObjects(ctx, at); err == nil {
		out.ReplicaObject = n
	}
	data, err := os.MkdirTemp("", "intake-bench-restore")
	if err != nil {
		return nil, at, err
	}
	defer os.RemoveAll(data)
	out.Load = loadAverage()
	fmt.Fprintf(progress, "restoring %d webhooks' store from %s\n", got.Acked, redactURL(at))
	cmd := exec.CommandContext(ctx, o.intakeBin, "restore", "--from", at, "--data", data)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, at, fmt.Errorf("intake restore: %w\n%s", err, b)
	}
	out.Seconds = time.Since(start).Seconds()
	fi, err := os.Stat(filepath.Join(data, "intake.db"))
	if err != nil {
		return nil, at, err
	}
	out.StoreBytes = fi.Size()
	out.MBPerSec = float64(out.StoreBytes) / 1e6 / out.Seconds
	return out, at, nil
}

// dbBytes is the size of the embedded store under data: its database file
// and its WAL, where Litestream's checkpoints have not copied it back yet.
func dbBytes(data string) int64 {
	var n int64
	for _, f := range []string{"intake.db", "intake.db-wal"} {
		if fi, err := os.Stat(filepath.Join(data, f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// countObjects counts the objects of the replica at u.
func countObjects(ctx context.Context, u string) (int, error) {
	b, err := blob.OpenURL(ctx, u)
	if err != nil {
		return 0, err
	}
	var n int
	after := ""
	for {
		objs, err := b.List(ctx, after, "\xff", 1000)
		if err != nil || len(objs) == 0 {
			return n, err
		}
		n += len(objs)
		after = objs[len(objs)-1].Key
	}
}

// removeReplicas deletes what the bench shipped to each replica in us.
func removeReplicas(us []string, progress io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, u := range us {
		if err := removeReplica(ctx, u); err != nil {
			fmt.Fprintf(progress, "removing the replica %s: %v\n", redactURL(u), err)
		}
	}
}

func removeReplica(ctx context.Context, u string) error {
	if dir, ok := strings.CutPrefix(u, "file://"); ok {
		return os.RemoveAll(filepath.Clean(dir))
	}
	b, err := blob.OpenURL(ctx, u)
	if err != nil {
		return err
	}
	for {
		objs, err := b.List(ctx, "", "\xff", 1000)
		if err != nil || len(objs) == 0 {
			return err
		}
		keys := make([]string, len(objs))
		for i, o := range objs {
			keys[i] = o.Key
		}
		if err := b.Delete(ctx, keys); err != nil {
			return err
		}
	}
}

// redactURL is u without its query (an endpoint's address, long) and
// with its credentials hidden.
func redactURL(u string) string {
	s, _, _ := strings.Cut(u, "?")
	return redact.URL(s)
}

// loadAverage is the machine's 1-minute load average (0 where it cannot
// be read).
func loadAverage() float64 {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return 0
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString(' ')
	v, _ := strconv.ParseFloat(strings.TrimSpace(line), 64)
	return v
}

func (r *ReplicateReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "replication to %s: closed loop, %d clients, %d-byte bodies, %s a run; load average %.2f at the start, %.2f at the end\n",
		r.Replica, r.Clients, r.BodyBytes, r.Duration, r.LoadAverage[0], r.LoadAverage[1])
	for i, rd := range r.Rounds {
		fmt.Fprintf(w, "round %d (%s; load %s):", i+1, strings.Join(rd.Order, ", "), formatLoads(rd.Load))
		for _, m := range []struct {
			name string
			run  *Run
		}{{replNone, rd.None}, {replAsync, rd.Async}, {replSync, rd.Sync}} {
			fmt.Fprintf(w, " %s %.0f/s p99 %.1f ms%s;", m.name, m.run.AckedPerSec, m.run.Ack.P99, errorsNote(m.run))
		}
		fmt.Fprintf(w, " async/none %.3f, sync/none %.3f\n", rd.AsyncRatio, rd.SyncRatio)
	}
	fmt.Fprintf(w, "median: async/none acked %.3f, sync/none acked %.3f; ack p99 none %.1f ms, async %.1f ms, sync %.1f ms\n",
		r.AsyncRatio, r.SyncRatio, r.NoneP99, r.AsyncP99, r.SyncP99)
	if r.Lag != nil {
		fmt.Fprintf(w, "lag at %.0f acked/s (open loop, load %.2f): p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms over %d samples; ack p99 %.1f ms%s\n",
			r.Lag.Run.AckedPerSec, r.Lag.Load, r.Lag.Lag.P50, r.Lag.Lag.P90, r.Lag.Lag.P99, r.Lag.Lag.Max, r.Lag.Samples, r.Lag.Run.Ack.P99, errorsNote(r.Lag.Run))
	}
	if r.Restore != nil {
		fmt.Fprintf(w, "restore: %d webhooks filled in %.0f s; the replica's %d objects restored to a %.2f GiB store in %.1f s (%.0f MB/s, load %.2f)\n",
			r.Restore.Webhooks, r.Restore.FillSeconds, r.Restore.ReplicaObject, float64(r.Restore.StoreBytes)/(1<<30),
			r.Restore.Seconds, r.Restore.MBPerSec, r.Restore.Load)
	}
}

func formatLoads(ls []float64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = strconv.FormatFloat(l, 'f', 2, 64)
	}
	return strings.Join(s, ", ")
}

// errorsNote names a run's failed requests, if any.
func errorsNote(r *Run) string {
	if len(r.Errors) == 0 {
		return ""
	}
	return " (errors " + formatErrors(r.Errors) + ")"
}

// checkReplicateFlags refuses replication settings the bench cannot use.
func checkReplicateFlags(o options) error {
	switch {
	case o.replicate == "":
		if o.lagRate != defaultLagRate || o.restoreBytes != 0 || o.replicateRounds != defaultReplicateRounds {
			return errors.New("--replicate-rounds, --lag-rate and --restore-bytes need --replicate")
		}
		return nil
	case !strings.HasPrefix(o.replicate, "s3://") && !strings.HasPrefix(o.replicate, "file:///"):
		return fmt.Errorf("--replicate %q: want s3://BUCKET/PATH?endpoint=…&region=… or file:///PATH", redactURL(o.replicate))
	case !o.spawn || o.db != "" || o.pipeline || o.noisy || o.faults || o.catalogPairs > 0 || o.e2e || o.baseline || o.processes > 1 || o.rate > 0:
		return errors.New("--replicate needs --spawn, without --db, --pipeline, --noisy, --faults, --catalog-pairs, --e2e, --baseline, --processes or --rate: it spawns each embedded-store server itself")
	case o.provider == "mix":
		return errors.New("--replicate: not with --provider mix")
	case o.replicateRounds < 1 || o.lagRate < 0 || o.restoreBytes < 0 || o.restoreBodyBytes < 1 || o.restoreBodyBytes > 8<<20:
		return errors.New("--replicate-rounds must be at least 1; --lag-rate and --restore-bytes not negative; --restore-body-bytes between 1 and 8 MiB")
	}
	return nil
}

const (
	defaultLagRate         = 1000
	defaultReplicateRounds = 3
)
