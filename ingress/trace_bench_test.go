package ingress_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/tracing"
)

// BenchmarkIngressHandlerTracing serves webhooks straight into the ingress
// handler (ingests discarded, no network) with tracing off, as it runs
// when no OTEL_* variable is set, and on, every request sampled into an
// in-memory exporter. allocs/op and B/op are the figures to compare, with
// each other and with the handler before tracing existed.
//
//	go test -run='^$' -bench=BenchmarkIngressHandlerTracing -benchmem ./ingress/
func BenchmarkIngressHandlerTracing(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchHandler(b) })
	b.Run("on", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		restore := tracing.Use(tp)
		defer func() { tp.Shutdown(context.Background()); restore() }()
		benchHandler(b)
		if len(exp.GetSpans()) == 0 {
			b.Fatal("tracing on recorded no span")
		}
	})
}

func benchHandler(b *testing.B) {
	h, path := benchIngress(b, func(s intake.Store) intake.Store { return discardIngests{s} })
	body := bytes.Repeat([]byte("x"), benchBodyBytes)
	serve := func() {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("ingress answered %d", rec.Code)
		}
	}
	serve() // the endpoint is now cached, as it is for a busy endpoint
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		serve()
	}
}
