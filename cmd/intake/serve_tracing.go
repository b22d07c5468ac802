package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/intakehq/intake/internal/tracing"
)

// tracingFlushTimeout bounds how long exit waits for the last spans to
// reach the collector.
const tracingFlushTimeout = 5 * time.Second

// startTracing turns OpenTelemetry tracing on when OTEL_* variables
// configure it, and returns what flushes it on exit.
func startTracing(ctx context.Context, log *slog.Logger) (flush func(), err error) {
	shutdown, enabled, err := tracing.Setup(ctx)
	if err != nil {
		return nil, err
	}
	if enabled {
		log.Info("tracing: exporting spans over OTLP/HTTP as the OTEL_* variables configure")
	}
	return func() {
		fctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
		defer cancel()
		if err := shutdown(fctx); err != nil {
			log.Warn("tracing: spans not flushed at exit", "err", err)
		}
	}, nil
}
