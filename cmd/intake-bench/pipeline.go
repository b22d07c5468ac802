package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// setToLastDelivery sets the whole-pipeline rate: the acked webhooks over
// the time from the first request to the last delivery (never shorter than
// the load itself, which a run with few deliveries could otherwise be).
func (r *Run) setToLastDelivery(last time.Time) {
	secs := max(last.Sub(r.started).Seconds(), r.Seconds)
	r.ToLastDeliverySeconds = secs
	r.ToLastDeliveryPerSec = float64(r.Acked) / secs
}

// writePipelineText prints the --pipeline report: one row per target, then
// the ratios between them.
func (r *Report) writePipelineText(w io.Writer) {
	load := fmt.Sprintf("closed loop, %d clients", r.Clients)
	if r.Mode == "open" {
		load = fmt.Sprintf("open loop, %g req/s (at most %d in flight)", r.Rate, r.Clients)
	}
	fmt.Fprintf(w, "intake-bench pipeline: %s, %s, %s per target, provider %s\n", load, r.bodies(), r.Duration, r.Provider)
	fmt.Fprintln(w, "rate: bare, acked/s; intake, acked webhooks / (first request → last delivery)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tacked\trate /s\tseconds\tack p50 ms\tack p99 ms\tdelivered p50 ms\tdelivered p99 ms\tmissing\tduplicates\tpeak RSS MiB\terrors\t")
	if b := r.Baseline; b != nil {
		fmt.Fprintf(tw, "bare\t%d\t%.0f\t%.1f\t%.2f\t%.2f\t-\t-\t-\t-\t-\t%s\t\n", b.Acked, b.AckedPerSec, b.Seconds, b.Ack.P50, b.Ack.P99, formatErrors(b.Errors))
	}
	for _, run := range []*Run{r.Intake, r.Postgres} {
		if run == nil {
			continue
		}
		delivered := "-\t-\t-\t-"
		if e := run.E2E; e != nil && e.Latency != nil {
			delivered = fmt.Sprintf("%.2f\t%.2f\t%d\t%d", e.Latency.P50, e.Latency.P99, e.Missing, e.Duplicates)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.1f\t%.2f\t%.2f\t%s\t%.1f\t%s\t\n", run.Target, run.Acked, run.ToLastDeliveryPerSec, run.ToLastDeliverySeconds,
			run.Ack.P50, run.Ack.P99, delivered, float64(run.PeakRSSBytes)/(1<<20), formatErrors(run.Errors))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, run := range []*Run{r.Intake, r.Postgres} {
		if run != nil && run.E2E != nil && run.E2E.Skipped != "" {
			fmt.Fprintf(w, "%s end to end: skipped: %s\n", run.Target, run.E2E.Skipped)
		}
	}
	if r.Ratio > 0 {
		fmt.Fprintf(w, "SQLite end to end / bare: %.3f\n", r.Ratio)
	}
	if r.Postgres == nil {
		fmt.Fprintln(w, "PostgreSQL: not measured (no --db)")
	} else if r.PostgresRatio > 0 {
		fmt.Fprintf(w, "PostgreSQL end to end / SQLite end to end: %.2f\n", r.PostgresRatio)
		if r.PostgresBareRatio > 0 {
			fmt.Fprintf(w, "PostgreSQL end to end / bare: %.3f\n", r.PostgresBareRatio)
		}
	}
}
