package router

import (
	"context"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/bodyurl"
)

// result is one delivery and how long its consumer asked us to wait.
type result struct {
	intake.Delivery
	retryAfter time.Duration
	deferred   bool
}

// deliverAll calls every consumer in parallel and returns one result each.
func (r *Router) deliverAll(ctx context.Context, e *intake.Event, attempt int, consumers []intake.Consumer) []result {
	out := make([]result, len(consumers))
	env := delivery.NewEnvelope(e)
	if e.DataTruncated && len(r.cfg.BodyURLs.Key) > 0 {
		env.BodyURL = r.cfg.BodyURLs.URL(e.MessageID, r.cfg.Clock.Now().Add(bodyurl.TTL))
	}
	var wg sync.WaitGroup
	for i, c := range consumers {
		wg.Go(func() {
			ctx, span := startDelivery(ctx, e, c, attempt)
			res := r.deliver(ctx, c, env)
			endDelivery(span, res)
			outcome := res.Outcome
			if res.Deferred {
				outcome = "deferred"
			}
			r.cfg.Metrics.Deliveries.WithLabelValues(outcome).Inc()
			r.cfg.Metrics.DeliverySeconds.WithLabelValues(res.Outcome).Observe(res.Latency.Seconds())
			if res.Outcome == intake.DeliveryHandled && !e.Replay {
				r.cfg.Metrics.EndToEnd.Observe(r.cfg.Clock.Now().Sub(e.ReceivedAt).Seconds())
			}
			out[i] = result{
				Delivery: intake.Delivery{
					ID: intake.NewID(), OrgID: e.OrgID, EventID: e.ID, ConsumerID: c.ID, Attempt: attempt,
					Outcome: res.Outcome, StatusCode: res.StatusCode, Latency: res.Latency, Error: res.Err,
					At: r.cfg.Clock.Now(),
				},
				retryAfter: res.RetryAfter,
				deferred:   res.Deferred,
			}
		})
	}
	wg.Wait()
	return out
}

// deliver makes one call to one consumer, within that consumer's share of
// concurrent calls. A consumer at its limit is waited for only briefly:
// then the call is deferred, so a slow consumer's backlog never holds the
// router's other events for long.
func (r *Router) deliver(ctx context.Context, c intake.Consumer, env delivery.Envelope) delivery.Result {
	slots := r.consumerSlots(c.ID)
	select {
	case slots <- struct{}{}:
	default:
		t := time.NewTimer(r.cfg.SlotWait)
		select {
		case slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			return delivery.Result{Outcome: intake.DeliveryRetry, Deferred: true, Err: "consumer at its concurrency limit"}
		}
	}
	defer func() { <-slots }()
	secret, err := r.cfg.Sealer.Open(c.SealedSecret, []byte(c.ID))
	if err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Err: "consumer secret cannot be opened"}
	}
	return r.cfg.Sender.Send(ctx, c.URL, string(secret), env, r.cfg.Clock.Now())
}

func (r *Router) consumerSlots(id string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.calls[id]
	if s == nil {
		s = make(chan struct{}, r.cfg.PerConsumer)
		r.calls[id] = s
	}
	return s
}
