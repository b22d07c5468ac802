package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// RetryRequest is the body of a retry now; it may be absent.
type RetryRequest struct {
	// DryRun changes nothing and answers what a retry would make due.
	DryRun bool `json:"dry_run,omitempty"`
}

// Retried is the answer to a retry now: how many events it made due and,
// for a dry run, the first of them.
type Retried struct {
	Count int     `json:"count"`
	Items []Event `json:"items,omitempty"`
}

// retryEvent makes an event's waiting routes due now.
func (s *Server) retryEvent(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	return s.retry(w, r, who, intake.RetrySelection{EventID: id})
}

// retryConsumer makes a consumer's waiting routes due now.
func (s *Server) retryConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	return s.retry(w, r, who, intake.RetrySelection{ConsumerID: id})
}

func (s *Server) retryIssue(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	return s.answerRetry(w, r, func(dryRun bool) (intake.Retried, error) { return s.ctl.RetryIssue(r.Context(), who, id, dryRun) })
}

func (s *Server) retry(w http.ResponseWriter, r *http.Request, who control.Caller, sel intake.RetrySelection) error {
	return s.answerRetry(w, r, func(dryRun bool) (intake.Retried, error) { return s.ctl.Retry(r.Context(), who, sel, dryRun) })
}

// answerRetry reads a retry's optional {dry_run}, runs it and answers
// {count} (and, for a dry run, the first items).
func (s *Server) answerRetry(w http.ResponseWriter, r *http.Request, run func(dryRun bool) (intake.Retried, error)) error {
	var req RetryRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return err
		}
	}
	res, err := run(req.DryRun)
	if err != nil {
		return err
	}
	out := Retried{Count: res.Count}
	if req.DryRun {
		out.Items = []Event{}
		for _, e := range res.Items {
			out.Items = append(out.Items, eventView(e))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ConsumerStats is a consumer's calls by hour over 24 hours or by day over
// 7 days, each window ending with the current hour or day (UTC).
type ConsumerStats struct {
	Window  string        `json:"window"`
	Buckets []StatsBucket `json:"buckets"`
}

// StatsBucket is one hour's or day's calls: those that succeeded
// (delivered) and failed, and the latencies of all of them.
type StatsBucket struct {
	Start     time.Time `json:"start"`
	Delivered int       `json:"delivered"`
	Failed    int       `json:"failed"`
	P50Ms     float64   `json:"p50_ms"`
	P99Ms     float64   `json:"p99_ms"`
}

func (s *Server) consumerStats(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	window := intake.StatsWindow(r.URL.Query().Get("window"))
	if window == "" {
		window = intake.StatsDay
	}
	bs, err := s.ctl.ConsumerStats(r.Context(), who, id, window)
	if err != nil {
		return err
	}
	out := ConsumerStats{Window: string(window), Buckets: make([]StatsBucket, 0, len(bs))}
	for _, b := range bs {
		out.Buckets = append(out.Buckets, StatsBucket{Start: b.Start.UTC(), Delivered: b.Delivered, Failed: b.Failed,
			P50Ms: ms(b.P50), P99Ms: ms(b.P99)})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
