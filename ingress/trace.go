package ingress

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/tracing"
)

// startReceive begins the ingress.receive span of a request, continuing a
// provider's traceparent when it sends one. Only while tracing is on does
// the request get a new context and its writer a status recorder.
func startReceive(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, trace.Span) {
	if !tracing.Enabled() {
		return w, r, noop.Span{}
	}
	ctx, span := tracing.Start(tracing.Extract(r.Context(), r.Header), "ingress.receive", trace.SpanKindServer)
	r = r.WithContext(ctx) // an unsampled span still carries the trace on
	if !span.IsRecording() {
		return w, r, span
	}
	span.SetAttributes(tracing.HTTPMethod(r.Method), tracing.HTTPRoute(tracing.WebhookRoute))
	return &statusRecorder{ResponseWriter: w}, r, span
}

// endReceive records what the request came to and ends its span.
func endReceive(w http.ResponseWriter, span trace.Span, result string) {
	if span.IsRecording() {
		span.SetAttributes(tracing.Outcome.String(result))
		if rec, ok := w.(*statusRecorder); ok && rec.status != 0 {
			span.SetAttributes(tracing.HTTPStatus(rec.status))
			if rec.status >= 500 {
				span.SetStatus(codes.Error, result)
			}
		}
	}
	span.End()
}

// traceEndpoint names the endpoint a request addressed on its span.
func traceEndpoint(ctx context.Context, ep intake.Endpoint) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(tracing.EndpointID.String(ep.ID), tracing.ConnectionID.String(ep.ConnectionID),
			tracing.OrgID.String(ep.OrgID), tracing.Provider.String(ep.Provider))
	}
}

// traceMessage ties a message to the request's span: the span names the
// message, and the message keeps the span's traceparent for the worker,
// sampled or not, so every later step follows the same sampling decision.
func traceMessage(ctx context.Context, m *intake.Message) {
	m.TraceParent = tracing.TraceParent(ctx)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(tracing.MessageID.String(m.ID))
	}
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}
