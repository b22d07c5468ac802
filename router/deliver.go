package router

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/rules"
)

// result is one delivery and how long its consumer asked us to wait.
type result struct {
	intake.Delivery
	retryAfter time.Duration
	deferred   bool
}

// deliverAll calls every consumer in parallel and returns one result each.
func (r *Router) deliverAll(ctx context.Context, e *intake.Event, attempt int, consumers []intake.Consumer, b *batch) []result {
	out := make([]result, len(consumers))
	env := delivery.NewEnvelope(e)
	if e.DataTruncated && len(r.cfg.BodyURLs.Key) > 0 {
		env.BodyURL = r.cfg.BodyURLs.URL(e.MessageID, r.cfg.Clock.Now().Add(bodyurl.TTL))
	}
	in := &ruleInput{e: e, env: env, b: b}
	var wg sync.WaitGroup
	for i, c := range consumers {
		wg.Go(func() {
			ctx, span := startDelivery(ctx, e, c, attempt)
			res := r.deliver(ctx, c, env, in, attempt)
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
func (r *Router) deliver(ctx context.Context, c intake.Consumer, env delivery.Envelope, in *ruleInput, attempt int) delivery.Result {
	if c.Filter != "" {
		fin, err := in.filter()
		if err != nil {
			// The request could not be read: nothing was judged, so the
			// consumer waits for the next attempt rather than being
			// declined.
			return delivery.Result{Outcome: intake.DeliveryRetry, Err: "read the request for the filter: " + intake.ErrorMessage(err)}
		}
		ok, err := r.cfg.Rules.Filter(ctx, c.Filter, fin)
		switch {
		case ctx.Err() != nil:
			return delivery.Result{Outcome: intake.DeliveryRetry, Err: "stopped before the filter ran"}
		case err != nil:
			return delivery.Result{Outcome: intake.DeliveryFiltered, Err: "filter_error: " + err.Error()}
		case !ok:
			return delivery.Result{Outcome: intake.DeliveryFiltered}
		}
	}
	var out *rules.Output
	if c.Transform != "" {
		body, err := in.json()
		if err == nil {
			fin, _ := in.filter() // the headers and query, when they could be read; a transform runs without them otherwise
			out, err = r.cfg.Rules.Transform(ctx, rules.Script{Scope: c.OrgID, Source: c.Transform}, body,
				rules.TransformContext{ConsumerID: c.ID, Consumer: c.Name, App: c.App, Attempt: attempt, Headers: fin.Headers, Query: fin.Query})
		}
		switch {
		case err != nil:
			// A failed attempt, retried on the event's schedule: fixing
			// the script heals what is still retrying.
			return delivery.Result{Outcome: intake.DeliveryRetry, Err: err.Error()}
		case out.Skip:
			return delivery.Result{Outcome: intake.DeliveryFiltered, Err: "transform returned null"}
		}
	}
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
	secrets, err := r.secrets(c)
	if err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Err: "consumer secret cannot be opened"}
	}
	if out != nil {
		header := out.Header
		if !out.JSON && header.Get("Content-Type") == "" {
			header = header.Clone()
			if header == nil {
				header = http.Header{}
			}
			header.Set("Content-Type", "text/plain; charset=utf-8")
		}
		return r.cfg.Sender.SendBody(ctx, c.URL, secrets, env.ID, out.Body, header, r.cfg.Clock.Now())
	}
	body, err := in.json()
	if err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Err: "encode envelope: " + err.Error()}
	}
	return r.cfg.Sender.SendBody(ctx, c.URL, secrets, env.ID, body, nil, r.cfg.Clock.Now())
}

// secrets are the consumer's signing secrets, opened for one delivery: the
// current one, and the one a rotation keeps beside it while it lasts.
func (r *Router) secrets(c intake.Consumer) ([]string, error) {
	secret, err := r.cfg.Sealer.Open(c.SealedSecret, []byte(c.ID))
	if err != nil {
		return nil, err
	}
	out := []string{string(secret)}
	if c.SignsWithOld(r.cfg.Clock.Now()) {
		old, err := r.cfg.Sealer.Open(c.SealedOldSecret, []byte(c.ID))
		if err != nil {
			return nil, err
		}
		out = append(out, string(old))
	}
	return out, nil
}

// ruleInput is what the rules of one event's consumers see, built once per
// event however many consumers ask for it.
type ruleInput struct {
	e   *intake.Event
	env delivery.Envelope
	b   *batch // holds the original request, read for the whole batch

	jsonOnce sync.Once
	body     []byte
	jsonErr  error

	inOnce sync.Once
	in     rules.Input
	inErr  error
}

// json is the envelope as the consumer would receive it.
func (ri *ruleInput) json() ([]byte, error) {
	ri.jsonOnce.Do(func() { ri.body, ri.jsonErr = json.Marshal(ri.env) })
	return ri.body, ri.jsonErr
}

// filter is a filter's view of the event: the envelope, and the original
// request's headers (lower-case names, first value, credentials removed)
// and query.
func (ri *ruleInput) filter() (rules.Input, error) {
	ri.inOnce.Do(func() {
		body, err := ri.json()
		if err != nil {
			ri.inErr = err
			return
		}
		if ri.in.Event, ri.inErr = rules.DecodeEvent(body); ri.inErr != nil {
			return
		}
		if ri.b.requestsErr != nil {
			ri.inErr = ri.b.requestsErr
			return
		}
		req := ri.b.requests[ri.e.MessageID] // none once the message was deleted
		ri.in.Headers, ri.in.Query = rules.RequestView(req.Header, req.Query)
	})
	return ri.in, ri.inErr
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
