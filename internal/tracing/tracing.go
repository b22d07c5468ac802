// Package tracing is intake's OpenTelemetry setup: one trace per message,
// from the ingress request through every processing and routing attempt
// to each delivery. It is configured by the standard OTEL_* variables and
// is off, costing nothing, when none is set.
//
// A message outlives the request that brought it: the store keeps the
// W3C traceparent of the step that created a row (TraceParent), and the
// step that later claims it, maybe in another process, continues from it
// (FromTraceParent).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// scope names intake as the instrumentation library of its spans.
const scope = "github.com/intakehq/intake"

// on is whether spans are made. Off, Start and the propagation helpers
// return at once, so the data plane pays one atomic load per step.
var on atomic.Bool

// tracecontext formats and parses the traceparent kept in the store and
// sent to consumers.
var tracecontext = propagation.TraceContext{}

// Shutdown flushes the spans still buffered and stops the exporter.
type Shutdown func(context.Context) error

// Setup turns tracing on when the environment configures it: any OTEL_*
// variable set, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
// Spans are then exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, …), sampled as OTEL_TRACES_SAMPLER
// says, under OTEL_SERVICE_NAME (default "intake"). Otherwise nothing is
// installed: the global tracer provider stays the no-op one. enabled says
// which; the returned Shutdown is safe to call either way. The variables
// are read from the process environment, as the exporter and the SDK read
// them.
func Setup(ctx context.Context) (shutdown Shutdown, enabled bool, err error) {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") && v != "" {
			env[k] = v
		}
	}
	none := func(context.Context) error { return nil }
	if len(env) == 0 || strings.EqualFold(env["OTEL_SDK_DISABLED"], "true") {
		return none, false, nil
	}
	switch exp := env["OTEL_TRACES_EXPORTER"]; exp {
	case "", "otlp":
	case "none":
		return none, false, nil
	default:
		return nil, false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: intake exports traces over OTLP only (otlp or none)", exp)
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p, ok := env[k]; ok && p != "http/protobuf" {
			return nil, false, fmt.Errorf("%s=%q: intake exports traces over OTLP/HTTP only (http/protobuf)", k, p)
		}
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("intake"), semconv.ServiceVersion(version())),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, false, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	restore := Use(tp)
	return func(ctx context.Context) error {
		defer restore()
		return tp.Shutdown(ctx)
	}, true, nil
}

// Use makes tp the tracer provider of every step and W3C tracecontext the
// propagator, and turns tracing on until the returned function restores
// the state before. Setup calls it; tests call it with an in-memory
// exporter.
func Use(tp trace.TracerProvider) (restore func()) {
	prevTP, prevProp, prevOn := otel.GetTracerProvider(), otel.GetTextMapPropagator(), on.Load()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(tracecontext)
	on.Store(true)
	return func() {
		on.Store(prevOn)
		otel.SetTextMapPropagator(prevProp)
		otel.SetTracerProvider(prevTP)
	}
}

// Enabled reports whether spans are being made.
func Enabled() bool { return on.Load() }

// Start begins the span of one step as a child of the span in ctx. While
// tracing is off it returns ctx as it is and a span that records nothing,
// allocating nothing; callers set attributes only when span.IsRecording().
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop.Span{}
	}
	return otel.GetTracerProvider().Tracer(scope).Start(ctx, name, trace.WithSpanKind(kind))
}

// Extract continues the trace a caller's request carries (its traceparent
// header), if any.
func Extract(ctx context.Context, h http.Header) context.Context {
	if !on.Load() {
		return ctx
	}
	return tracecontext.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject gives an outgoing request the traceparent of the span in ctx, so
// the receiver's own tracing continues the trace.
func Inject(ctx context.Context, h http.Header) {
	if !on.Load() {
		return
	}
	tracecontext.Inject(ctx, propagation.HeaderCarrier(h))
}

// TraceParent is the W3C traceparent of the span in ctx, for the store to
// keep beside the row that span created; "" when there is none.
func TraceParent(ctx context.Context) string {
	if !on.Load() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	tracecontext.Inject(ctx, c)
	return c["traceparent"]
}

// FromTraceParent returns ctx carrying the span a stored traceparent
// names, as the remote parent of the next step; an empty or malformed one
// leaves ctx as it is (the step then starts a trace of its own).
func FromTraceParent(ctx context.Context, traceparent string) context.Context {
	if !on.Load() || traceparent == "" {
		return ctx
	}
	return tracecontext.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Attribute keys of intake's spans. Values are ids, counts, states and
// codes: never secrets, tokens, bodies, header values or URLs.
const (
	OrgID        = attribute.Key("intake.org.id")
	ConnectionID = attribute.Key("intake.connection.id")
	EndpointID   = attribute.Key("intake.endpoint.id")
	MessageID    = attribute.Key("intake.message.id")
	EventID      = attribute.Key("intake.event.id")
	EventType    = attribute.Key("intake.event.type")
	ConsumerID   = attribute.Key("intake.consumer.id")
	Provider     = attribute.Key("intake.provider")
	Attempt      = attribute.Key("intake.attempt")
	// Outcome is what the step came to: an ingress result, a message's
	// state and outcome, an event's routing state, a delivery's outcome.
	Outcome    = attribute.Key("intake.outcome")
	State      = attribute.Key("intake.state")
	ErrorCode  = attribute.Key("intake.error.code")
	Deliveries = attribute.Key("intake.deliveries")
	Events     = attribute.Key("intake.events")
)

// version is intake's module version as the build recorded it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}
