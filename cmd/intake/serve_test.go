package main

import (
	"bytes"
	"testing"

	"github.com/alecthomas/kong"
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
