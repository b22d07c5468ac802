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

// startRoute begins the router.route span of an event's fan-out, in the
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

// traceFannedOut records what a fan-out wrote: the state it left the
// event in and how many routes, or that it could not write them.
func traceFannedOut(ctx context.Context, state string, routes int, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		span.SetAttributes(tracing.Outcome.String("stale"))
	case err != nil:
		span.SetStatus(codes.Error, "fan-out failed")
	default:
		span.SetAttributes(tracing.State.String(state), tracing.Deliveries.Int(routes))
	}
}

// traceUnrouted marks a fan-out that could not judge the event.
func traceUnrouted(ctx context.Context, why string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetStatus(codes.Error, why)
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

// endDelivery records what the call came to and whether its result was
// settled, and ends its span.
func endDelivery(span trace.Span, res delivery.Result, settleErr error) {
	if span.IsRecording() {
		span.SetAttributes(tracing.Outcome.String(res.Outcome))
		if res.StatusCode != 0 {
			span.SetAttributes(tracing.HTTPStatus(res.StatusCode))
		}
		switch {
		case intake.ErrorCode(settleErr) == intake.ESTALE:
			span.SetAttributes(tracing.State.String("stale"))
		case settleErr != nil:
			span.SetStatus(codes.Error, "settle failed")
		case res.Outcome == intake.DeliveryRetry || res.Outcome == intake.DeliveryDead:
			span.SetStatus(codes.Error, "delivery failed")
		}
	}
	span.End()
}
