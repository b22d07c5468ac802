package main

import (
	"context"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// serveFlags parses `intake serve args…` as main does, without running it.
func serveFlags(t *testing.T, args ...string) *ServeCmd {
	t.Helper()
	var cli CLI
	parser, err := kong.New(&cli, kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(append([]string{"serve"}, args...)); err != nil {
		t.Fatal(err)
	}
	return &cli.Serve
}

func TestConsumerDenyAndAllowFlagsTightenTheAddressPolicy(t *testing.T) {
	t.Setenv("INTAKE_CONSUMER_DENY", "")
	t.Setenv("INTAKE_CONSUMER_ALLOW", "")
	ctx := context.Background()
	check := func(c *ServeCmd, refused map[string]bool) {
		t.Helper()
		p, err := c.consumerPolicy()
		if err != nil {
			t.Fatal(err)
		}
		for u, want := range refused {
			if err := p.CheckURL(ctx, u, nil); (err != nil) != want {
				t.Errorf("%s: %v, refused want %v", u, err, want)
			}
		}
	}
	// Repeated, and comma-separated.
	check(serveFlags(t, "--consumer-deny", "10.0.0.0/8", "--consumer-deny", "192.168.0.0/16,fc00::/7"), map[string]bool{
		"http://10.1.2.3/": true, "http://192.168.1.1/": true, "http://[fd00::1]/": true, "http://127.0.0.1/": false,
		"http://169.254.169.254/": true,
	})
	check(serveFlags(t), map[string]bool{"http://10.1.2.3/": false, "http://[fd00:ec2::254]/": true})
	t.Setenv("INTAKE_CONSUMER_ALLOW", "10.1.0.0/16,100.64.0.0/10")
	check(serveFlags(t), map[string]bool{
		"http://10.1.2.3/": false, "http://10.2.0.1/": true, "http://127.0.0.1/": true,
		"http://100.64.0.1/": false, "http://100.100.100.200/": true,
	})
	t.Setenv("INTAKE_CONSUMER_DENY", "10.0.0.0/33")
	if _, err := serveFlags(t).consumerPolicy(); err == nil || !strings.Contains(err.Error(), `--consumer-deny "10.0.0.0/33"`) {
		t.Fatalf("a malformed range: %v", err)
	}
}
