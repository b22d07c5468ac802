package router

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/tracing"
)

// startRoute begins the router.route span of one routing attempt, in the
// trace of the processing attempt that created the event (its stored
// traceparent).
func startRoute(ctx context.Context, c intake.EventClaim) (context.Context, trace.Span) {
	ctx, span := tracing.Start(tracing.FromTraceParent(ctx, c.Event.TraceParent), "router.route", trace.SpanKindConsumer)
	if span.IsRecording() {
		e := &c.Event
		span.SetAttributes(tracing.EventID.String(e.ID), tracing.MessageID.String(e.MessageID),
			tracing.ConnectionID.String(e.ConnectionID), tracing.OrgID.String(e.OrgID),
			tracing.EventType.String(e.Type), tracing.Attempt.Int(c.Attempt))
	}
	return ctx, span
}

// traceRouted records the state a routing attempt settled the event in,
// or that it could not settle.
func traceRouted(ctx context.Context, st intake.EventSettlement, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		span.SetAttributes(tracing.Outcome.String("stale"))
	case err != nil:
		span.SetStatus(codes.Error, "settle failed")
	default:
		span.SetAttributes(tracing.State.String(string(st.To)), tracing.Deliveries.Int(len(st.Deliveries)))
		if st.To == intake.EventDead {
			span.SetStatus(codes.Error, "dead")
		}
	}
}

// traceUnrouted marks a routing attempt that could not read the consumers.
func traceUnrouted(ctx context.Context) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetStatus(codes.Error, "consumers unavailable")
	}
}

// startDelivery begins the delivery.send span of one call to a consumer;
// its context is the traceparent the consumer receives. The span names
// the consumer's host, never its URL, whose path or query may hold a
// token.
func startDelivery(ctx context.Context, e *intake.Event, c intake.Consumer, attempt int) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, "delivery.send", trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(tracing.ConsumerID.String(c.ID), tracing.EventID.String(e.ID), tracing.Attempt.Int(attempt),
			tracing.HTTPMethod("POST"))
		if u, err := url.Parse(c.URL); err == nil {
			span.SetAttributes(tracing.ServerAddress(u.Hostname()))
		}
	}
	return ctx, span
}

// endDelivery records what the call came to and ends its span.
func endDelivery(span trace.Span, res delivery.Result) {
	if span.IsRecording() {
		outcome := res.Outcome
		if res.Deferred {
			outcome = "deferred"
		}
		span.SetAttributes(tracing.Outcome.String(outcome))
		if res.StatusCode != 0 {
			span.SetAttributes(tracing.HTTPStatus(res.StatusCode))
		}
		if res.Outcome == intake.DeliveryRetry && !res.Deferred {
			span.SetStatus(codes.Error, "delivery failed")
		}
	}
	span.End()
}
