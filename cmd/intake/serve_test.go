package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
)

func TestServeTakesItsMetricsAddressFromTheEnvironmentWhenNoFlagGivesIt(t *testing.T) {
	parse := func(args ...string) ServeCmd {
		t.Helper()
		var cli CLI
		var out bytes.Buffer
		parser, err := kong.New(&cli, kong.Name("intake"), kong.Vars{"version": currentBuild().String()}, kong.Writers(&out, &out),
			kong.Exit(func(code int) { t.Fatalf("intake %v exited %d: %s", args, code, out.String()) }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(args); err != nil {
			t.Fatalf("intake %v: %v", args, err)
		}
		return cli.Serve
	}
	t.Setenv("INTAKE_METRICS_ADDR", "")
	if got := parse("serve").MetricsAddr; got != "" {
		t.Fatalf("default --metrics-addr %q, want empty: /metrics on --addr", got)
	}
	t.Setenv("INTAKE_METRICS_ADDR", "127.0.0.1:9091")
	if got := parse("serve").MetricsAddr; got != "127.0.0.1:9091" {
		t.Fatalf("--metrics-addr from INTAKE_METRICS_ADDR: %q", got)
	}
	if got := parse("serve", "--metrics-addr", ":9092").MetricsAddr; got != ":9092" {
		t.Fatalf("the flag over the environment: %q", got)
	}
}

func TestServeTakesTheMetricsTokenAndSeriesPerConsumerFromTheEnvironmentOffByDefault(t *testing.T) {
	t.Setenv("INTAKE_METRICS_TOKEN", "")
	t.Setenv("INTAKE_METRICS_PER_CONSUMER", "")
	os.Unsetenv("INTAKE_METRICS_PER_CONSUMER") // restored by t.Setenv
	if c := serveFlags(t); c.MetricsToken != "" || c.MetricsByConsumer {
		t.Fatalf("defaults: --metrics-token %q, --metrics-per-consumer %v; want neither", c.MetricsToken, c.MetricsByConsumer)
	}
	t.Setenv("INTAKE_METRICS_TOKEN", "from-env")
	t.Setenv("INTAKE_METRICS_PER_CONSUMER", "true")
	if c := serveFlags(t); c.MetricsToken != "from-env" || !c.MetricsByConsumer {
		t.Fatalf("from the environment: --metrics-token %q, --metrics-per-consumer %v", c.MetricsToken, c.MetricsByConsumer)
	}
	if c := serveFlags(t, "--metrics-token", "from-flag"); c.MetricsToken != "from-flag" {
		t.Fatalf("the flag over the environment: %q", c.MetricsToken)
	}
}

func TestServeMetricsAnswer401WithoutTheMetricsTokenAnd200WithIt(t *testing.T) {
	t.Setenv("INTAKE_METRICS_TOKEN", "")
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	scrape := func(h http.Handler, auth string) int {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	h := serveFlags(t, "--metrics-token", "s3cret").metricsHandler(metrics.New(), clock, log)
	for auth, want := range map[string]int{"": 401, "Bearer nope": 401, "Bearer s3cret": 200} {
		if got := scrape(h, auth); got != want {
			t.Errorf("--metrics-token set, Authorization %q: %d, want %d", auth, got, want)
		}
	}
	if got := scrape(serveFlags(t).metricsHandler(metrics.New(), clock, log), ""); got != 200 {
		t.Errorf("no --metrics-token: %d, want 200", got)
	}
}
