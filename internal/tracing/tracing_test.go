package tracing_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/intakehq/intake/internal/tracing"
	"github.com/intakehq/intake/internal/tracing/otlptest"
)

// clearOTEL unsets every OTEL_* variable for the test, so the machine's
// own environment cannot decide it.
func clearOTEL(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
}

func TestSetupWithoutOTELVariablesInstallsNothing(t *testing.T) {
	clearOTEL(t)
	before := otel.GetTracerProvider()
	shutdown, enabled, err := tracing.Setup(context.Background())
	if err != nil || enabled {
		t.Fatalf("Setup = enabled %v, %v; want off", enabled, err)
	}
	if otel.GetTracerProvider() != before || tracing.Enabled() {
		t.Fatal("Setup without OTEL_* variables changed the global tracer provider")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSetupStaysOffWhenTheSDKIsDisabledOrTheExporterIsNone(t *testing.T) {
	for _, kv := range [][2]string{{"OTEL_SDK_DISABLED", "true"}, {"OTEL_TRACES_EXPORTER", "none"}} {
		t.Run(kv[0], func(t *testing.T) {
			clearOTEL(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(kv[0], kv[1])
			_, enabled, err := tracing.Setup(context.Background())
			if err != nil || enabled || tracing.Enabled() {
				t.Fatalf("Setup with %s=%s = enabled %v, %v; want off", kv[0], kv[1], enabled, err)
			}
		})
	}
}

func TestSetupRefusesAnExporterOrProtocolItCannotServe(t *testing.T) {
	for _, kv := range [][2]string{{"OTEL_TRACES_EXPORTER", "zipkin"}, {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"}} {
		t.Run(kv[0], func(t *testing.T) {
			clearOTEL(t)
			t.Setenv(kv[0], kv[1])
			_, enabled, err := tracing.Setup(context.Background())
			if err == nil || enabled || !strings.Contains(err.Error(), kv[0]) {
				t.Fatalf("Setup with %s=%s = enabled %v, error %v; want an error naming the variable", kv[0], kv[1], enabled, err)
			}
		})
	}
}

func TestSetupExportsSpansToTheConfiguredOTLPEndpointAndFlushesOnShutdown(t *testing.T) {
	clearOTEL(t)
	rcv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "intake-test")
	shutdown, enabled, err := tracing.Setup(context.Background())
	if err != nil || !enabled {
		t.Fatalf("Setup = enabled %v, %v; want on", enabled, err)
	}
	_, span := tracing.Start(context.Background(), "test.step", trace.SpanKindInternal)
	span.SetAttributes(tracing.MessageID.String("m-1"))
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tracing.Enabled() {
		t.Error("tracing still on after shutdown")
	}
	spans := rcv.WaitFor(t, 10*time.Second, "the span exported", func(s []otlptest.Span) bool { return len(s) > 0 })
	if len(spans) != 1 || spans[0].Name != "test.step" || spans[0].Service != "intake-test" ||
		spans[0].Attributes["intake.message.id"] != "m-1" {
		t.Fatalf("received %+v", spans)
	}
}

func TestTraceParentSurvivesAsTheRemoteParentOfTheNextStep(t *testing.T) {
	restore := tracing.Use(sdktrace.NewTracerProvider())
	defer restore()
	ctx, span := tracing.Start(context.Background(), "first", trace.SpanKindServer)
	defer span.End()
	tp := tracing.TraceParent(ctx)
	sc := span.SpanContext()
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; tp != want {
		t.Fatalf("TraceParent = %q, want %q", tp, want)
	}
	_, next := tracing.Start(tracing.FromTraceParent(context.Background(), tp), "next", trace.SpanKindConsumer)
	defer next.End()
	ro := next.(sdktrace.ReadOnlySpan)
	if ro.Parent().SpanID() != sc.SpanID() || !ro.Parent().IsRemote() || next.SpanContext().TraceID() != sc.TraceID() {
		t.Fatalf("next span's parent %v, want the remote %v", ro.Parent(), sc)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-0000000000000000-01"} {
		if sc := trace.SpanContextFromContext(tracing.FromTraceParent(context.Background(), bad)); sc.IsValid() {
			t.Errorf("FromTraceParent(%q) gave a valid parent %v", bad, sc)
		}
	}
}

func TestInjectAndExtractCarryTheW3CTraceparentHeader(t *testing.T) {
	restore := tracing.Use(sdktrace.NewTracerProvider())
	defer restore()
	ctx, span := tracing.Start(context.Background(), "send", trace.SpanKindClient)
	defer span.End()
	h := http.Header{}
	tracing.Inject(ctx, h)
	if h.Get("traceparent") != tracing.TraceParent(ctx) || h.Get("traceparent") == "" {
		t.Fatalf("injected traceparent %q, want %q", h.Get("traceparent"), tracing.TraceParent(ctx))
	}
	if got := trace.SpanContextFromContext(tracing.Extract(context.Background(), h)); got.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("extracted %v, want %v", got, span.SpanContext())
	}
}

// TestTracingOffCostsNoAllocation: with tracing off, a step's span, its
// propagation and its attribute guard allocate nothing.
func TestTracingOffCostsNoAllocation(t *testing.T) {
	if tracing.Enabled() {
		t.Fatal("tracing is on at the start of the test")
	}
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		c, span := tracing.Start(tracing.Extract(ctx, h), "ingress.receive", trace.SpanKindServer)
		if span.IsRecording() {
			span.SetAttributes(tracing.MessageID.String("m"))
		}
		c = tracing.FromTraceParent(c, tracing.TraceParent(c))
		tracing.Inject(c, h)
		span.End()
	})
	if allocs != 0 {
		t.Fatalf("tracing off allocated %v times per step, want 0", allocs)
	}
	if len(h["Traceparent"]) != 1 {
		t.Fatalf("Inject with tracing off changed the header: %v", h)
	}
}
