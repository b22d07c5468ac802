package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Run is what one load run against one target measured.
type Run struct {
	Target       string         `json:"target"` // "baseline", "intake", or with --pipeline "sqlite" and "postgres"
	Seconds      float64        `json:"seconds"`
	Sent         int            `json:"sent"`
	Acked        int            `json:"acked"`
	AckedPerSec  float64        `json:"acked_per_sec"`
	Ack          Latency        `json:"ack_latency_ms"`
	Errors       map[string]int `json:"errors"`                   // by status code, or "transport"
	PeakRSSBytes int64          `json:"peak_rss_bytes,omitempty"` // the largest of the servers'
	// ServerCPUSeconds is the CPU time (user and system) the spawned
	// servers used in all, from their start to the end of the run.
	ServerCPUSeconds float64 `json:"server_cpu_seconds,omitempty"`
	Processes        int     `json:"processes,omitempty"` // servers spawned, sharing one store
	E2E              *E2E    `json:"e2e,omitempty"`
	// The whole pipeline: from the first request to the last delivery, and
	// the acked webhooks over that time; set when something was delivered.
	ToLastDeliverySeconds float64 `json:"to_last_delivery_seconds,omitempty"`
	ToLastDeliveryPerSec  float64 `json:"to_last_delivery_per_sec,omitempty"`

	started time.Time // when the first request was sent
}

// E2E is the end-to-end measure: received by intake → got by the consumer.
type E2E struct {
	Skipped    string   `json:"skipped,omitempty"`    // why it was not measured
	Consumer   string   `json:"consumer,omitempty"`   // where it was delivered: http, nats, kafka
	Delivered  int      `json:"delivered,omitempty"`  // distinct webhooks the consumer got
	Missing    int      `json:"missing,omitempty"`    // acked webhooks it never got
	Duplicates int      `json:"duplicates,omitempty"` // repeated deliveries (at-least-once)
	Latency    *Latency `json:"latency_ms,omitempty"`
	// Paused is the second consumer --paused-consumer registered, paused.
	Paused *PausedConsumer `json:"paused_consumer,omitempty"`
	// Rate is the rate the measured consumer was delivered at, with
	// --consumer-rate.
	Rate *DeliveredRate `json:"delivered_rate,omitempty"`
}

// PausedConsumer is what became of the paused consumer's share of the
// events: held routes, and no delivery.
type PausedConsumer struct {
	Held      int `json:"held"`      // its routes held when the run ended, by its health
	Delivered int `json:"delivered"` // calls it got anyway: 0 when pause holds
}

// DeliveredRate is the rate a consumer's calls arrived at: every call over
// the time from the first to the last.
type DeliveredRate struct {
	Limit      float64 `json:"limit_per_sec"` // its rate_per_sec
	Deliveries int     `json:"deliveries"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"per_sec"`
	OfLimit    float64 `json:"of_limit"` // PerSec / Limit
}

// Latency is a distribution in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Report is the whole output of one intake-bench invocation.
type Report struct {
	Mode      string  `json:"mode"` // "closed" (as fast as the clients can) or "open" (fixed rate)
	Clients   int     `json:"clients"`
	Rate      float64 `json:"rate,omitempty"`
	BodyBytes int     `json:"body_bytes"`
	Duration  string  `json:"duration"`
	Provider  string  `json:"provider"`
	Baseline  *Run    `json:"baseline,omitempty"`
	Intake    *Run    `json:"intake"`
	Pipeline  bool    `json:"pipeline,omitempty"` // Intake is on SQLite, Postgres on PostgreSQL
	Postgres  *Run    `json:"postgres,omitempty"`
	// Ratio is intake's acked requests/s over the baseline's, in this run;
	// with --pipeline, SQLite's acked webhooks per second to the last
	// delivery over the baseline's acked requests/s.
	Ratio float64 `json:"ratio,omitempty"`
	// PostgresRatio is PostgreSQL's rate to the last delivery over SQLite's.
	PostgresRatio float64 `json:"postgres_ratio,omitempty"`
	// PostgresBareRatio is PostgreSQL's rate to the last delivery over the
	// baseline's acked requests/s (--pipeline with --db).
	PostgresBareRatio float64 `json:"postgres_bare_ratio,omitempty"`
}

// percentile is the p-th percentile of sorted by the nearest-rank method:
// the smallest value with at least p% of all values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// summarize sorts ds in place and returns its distribution.
func summarize(ds []time.Duration) Latency {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Latency{P50: ms(percentile(ds, 50)), P90: ms(percentile(ds, 90)), P99: ms(percentile(ds, 99)), Max: ms(percentile(ds, 100))}
}

// writeText prints the report for people: one row per target, then the
// ratio and what only some runs have.
func (r *Report) writeText(w io.Writer) {
	if r.Pipeline {
		r.writePipelineText(w)
		return
	}
	load := fmt.Sprintf("closed loop, %d clients", r.Clients)
	if r.Mode == "open" {
		load = fmt.Sprintf("open loop, %g req/s (at most %d in flight)", r.Rate, r.Clients)
	}
	fmt.Fprintf(w, "intake-bench: %s, %s, %s, provider %s\n\n", load, r.bodies(), r.Duration, r.Provider)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tacked\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\t")
	for _, run := range []*Run{r.Baseline, r.Intake} {
		if run == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n", run.Target, run.Acked, run.AckedPerSec,
			run.Ack.P50, run.Ack.P90, run.Ack.P99, run.Ack.Max, formatErrors(run.Errors))
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.Baseline != nil {
		fmt.Fprintf(w, "intake/baseline req/s: %.2f\n", r.Ratio)
	}
	if r.Intake == nil {
		return
	}
	switch {
	case r.Intake.Processes > 1:
		fmt.Fprintf(w, "intake: %d processes on one database, the load round-robin across them; peak RSS of the largest: %.1f MiB\n",
			r.Intake.Processes, float64(r.Intake.PeakRSSBytes)/(1<<20))
	case r.Intake.PeakRSSBytes > 0:
		fmt.Fprintf(w, "intake peak RSS: %.1f MiB\n", float64(r.Intake.PeakRSSBytes)/(1<<20))
	default:
		fmt.Fprintln(w, "intake peak RSS: not measured (the server was not spawned)")
	}
	switch e := r.Intake.E2E; {
	case e == nil:
	case e.Skipped != "":
		fmt.Fprintf(w, "end-to-end: skipped: %s\n", e.Skipped)
	default:
		if e.Consumer != "" {
			fmt.Fprintf(w, "consumer: %s\n", e.Consumer)
		}
		fmt.Fprintf(w, "end-to-end (received → consumer): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms; delivered %d, missing %d, duplicates %d\n",
			e.Latency.P50, e.Latency.P90, e.Latency.P99, e.Latency.Max, e.Delivered, e.Missing, e.Duplicates)
		if r.Intake.ToLastDeliveryPerSec > 0 {
			fmt.Fprintf(w, "acked webhooks / (first request → last delivery): %.0f/s over %.1f s\n", r.Intake.ToLastDeliveryPerSec, r.Intake.ToLastDeliverySeconds)
		}
		if p := e.Paused; p != nil {
			fmt.Fprintf(w, "with a second consumer of the same events, paused: %d of its routes held at the end, %d delivered to it\n", p.Held, p.Delivered)
		}
		if d := e.Rate; d != nil {
			fmt.Fprintf(w, "consumer rate_per_sec %g: delivered %d over %.1f s (first → last delivery) = %.2f/s, %.3f of the limit\n",
				d.Limit, d.Deliveries, d.Seconds, d.PerSec, d.OfLimit)
		}
	}
}

// formatErrors lists error counts by key in order, "-" when there are none.
func formatErrors(errs map[string]int) string {
	if len(errs) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, errs[k]))
	}
	return strings.Join(parts, " ")
}

// bodies says what the load posted: bodies of --body-bytes, or the mix's
// provider samples, whose size is their own.
func (r *Report) bodies() string {
	if r.Provider == "mix" {
		return "provider samples as bodies"
	}
	return fmt.Sprintf("%d-byte bodies", r.BodyBytes)
}
