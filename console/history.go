package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/intakehq/intake"
)

// consumerDeliveries is how many of a consumer's last deliveries its page
// lists.
const consumerDeliveries = 20

// consumerHistory is a consumer's history as its page shows it: its last
// deliveries, and its calls and their latency per hour over 24 hours and
// per day over 7 days.
type consumerHistory struct {
	Deliveries          []intake.Delivery
	Hourly, Daily       chart
	HourlyMs, DailyMs   chart
	HourlyCalls, Weekly string // the calls each window counts ("3 calls")
	Charted             bool
	// Unavailable says why the charts are not drawn: their read ran out
	// of its budget.
	Unavailable string
}

func (c *Console) consumerHistory(ctx context.Context, s *session, id string) (consumerHistory, error) {
	var h consumerHistory
	var err error
	if h.Deliveries, err = c.ctl.ConsumerDeliveries(ctx, s.caller(), id, consumerDeliveries); err != nil {
		return h, err
	}
	day, err := c.ctl.ConsumerStats(ctx, s.caller(), id, intake.StatsDay)
	if err == nil {
		var week []intake.DeliveryBucket
		if week, err = c.ctl.ConsumerStats(ctx, s.caller(), id, intake.StatsWeek); err == nil {
			h.chart(day, week)
		}
	}
	// A history too long to count within the read budget leaves the rest
	// of the page to be read.
	if code := intake.ErrorCode(err); code == intake.EUNAVAILABLE || code == intake.EBUSY {
		h.Unavailable = intake.ErrorMessage(err)
		return h, nil
	}
	return h, err
}

// chart draws a consumer's buckets by the hour and by the day.
func (h *consumerHistory) chart(day, week []intake.DeliveryBucket) {
	hourly := statSlots(day, func(t time.Time) (string, string) { return t.Format("15:04"), hourSpan(t) })
	daily := statSlots(week, func(t time.Time) (string, string) { return t.Format("Mon 02"), t.Format("Mon 2 Jan") + " (UTC)" })
	calls := []part{{"processed", "delivered"}, {"dead", "failed"}}
	latency := []part{{"p50", "p50"}, {"p99", "p99"}}
	h.Hourly = barChart("Calls delivered and failed per hour over the last 24 hours", calls, hourly, 3)
	h.HourlyMs = lineChart("p50 and p99 latency per hour over the last 24 hours", " ms", latency, hourly, 3)
	h.Daily = barChart("Calls delivered and failed per day over the last 7 days", calls, daily, 1)
	h.DailyMs = lineChart("p50 and p99 latency per day over the last 7 days", " ms", latency, daily, 1)
	h.HourlyCalls, h.Weekly, h.Charted = count(callsIn(day), "call", "calls"), count(callsIn(week), "call", "calls"), true
}

// statSlots makes a chart's slots of a consumer's buckets.
func statSlots(bs []intake.DeliveryBucket, name func(time.Time) (label, span string)) []slot {
	out := make([]slot, 0, len(bs))
	for _, b := range bs {
		label, span := name(b.Start.UTC())
		out = append(out, slot{Label: label, Span: span, Values: []int{b.Delivered, b.Failed},
			Points: []float64{msOf(b.P50), msOf(b.P99)}, Has: b.Delivered+b.Failed > 0})
	}
	return out
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func callsIn(bs []intake.DeliveryBucket) int {
	n := 0
	for _, b := range bs {
		n += b.Delivered + b.Failed
	}
	return n
}

// retryEvent makes an event's waiting routes due now.
func (c *Console) retryEvent(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	res, err := c.ctl.Retry(r.Context(), s.caller(), intake.RetrySelection{EventID: id}, false)
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/events/"+id+retriedFlash(res.Count))
}

// retryConsumer makes every event waiting for a consumer due now.
func (c *Console) retryConsumer(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	res, err := c.ctl.Retry(r.Context(), s.caller(), intake.RetrySelection{ConsumerID: id}, false)
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/consumers/"+id+retriedFlash(res.Count))
}

// retriedFlash is the notice a page shows after a retry made n events due.
func retriedFlash(n int) string {
	if n == 1 {
		return "?flash=retried-one"
	}
	return "?flash=retried&n=" + strconv.Itoa(n)
}
