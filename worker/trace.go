package worker

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/tracing"
)

// startProcess begins the worker.process span of one attempt, in the trace
// of the request that brought the message (its stored traceparent), which
// may have been received by another process.
func startProcess(ctx context.Context, c intake.Claim) (context.Context, trace.Span) {
	ctx, span := tracing.Start(tracing.FromTraceParent(ctx, c.Message.TraceParent), "worker.process", trace.SpanKindConsumer)
	if span.IsRecording() {
		m := &c.Message
		span.SetAttributes(tracing.MessageID.String(m.ID), tracing.EndpointID.String(m.EndpointID),
			tracing.ConnectionID.String(m.ConnectionID), tracing.OrgID.String(m.OrgID), tracing.Attempt.Int(c.Attempt))
	}
	return ctx, span
}

// traceEvents gives the events an attempt creates its span's traceparent,
// sampled or not, so routing them continues the message's trace.
func traceEvents(ctx context.Context, events []intake.Event) {
	tp := tracing.TraceParent(ctx)
	if tp == "" {
		return
	}
	for i := range events {
		events[i].TraceParent = tp
	}
}

// traceSettled records what the attempt came to: the state and outcome it
// settled with, or why it could not settle.
func traceSettled(span trace.Span, st intake.Settlement, out intake.Settled, err error) {
	if !span.IsRecording() {
		return
	}
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		span.SetAttributes(tracing.Outcome.String("stale"))
		return
	case err != nil:
		span.SetStatus(codes.Error, "settle failed")
		return
	}
	span.SetAttributes(tracing.State.String(string(out.State)), tracing.Outcome.String(out.Outcome),
		tracing.Events.Int(len(out.Events)))
	if st.ErrorCode != "" {
		span.SetAttributes(tracing.ErrorCode.String(st.ErrorCode))
	}
	if out.State == intake.MessageFailed || out.State == intake.MessageDead {
		span.SetStatus(codes.Error, st.ErrorCode)
	}
}
