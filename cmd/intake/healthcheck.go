package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"
)

// HealthcheckCmd is the container probe: it asks the local server whether it
// is ready, so an image without a shell or curl can still be health-checked.
type HealthcheckCmd struct {
	Addr    string        `default:":8080" env:"INTAKE_ADDR" help:"The address intake serve listens on; the probe asks its loopback. --server (or INTAKE_URL) overrides it."`
	Timeout time.Duration `default:"3s" help:"How long the probe waits for an answer."`
}

// Run exits 0 (nil) when /readyz answers 200, otherwise returns one line
// saying why, which main prints on stderr before exiting 1.
func (c *HealthcheckCmd) Run(cl *Client, kctx *kong.Context) error {
	base, err := c.base(cl, urlGiven(kctx))
	if err != nil {
		return err
	}
	return probe(base+"/readyz", c.Timeout)
}

// base is the server to ask: the client's --server when the user gave one,
// else the loopback address of --addr.
func (c *HealthcheckCmd) base(cl *Client, explicitURL bool) (string, error) {
	if explicitURL {
		return strings.TrimRight(cl.Server, "/"), nil
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "", fmt.Errorf("healthcheck: --addr %q: %w", c.Addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// urlGiven reports whether --server was on the command line or INTAKE_URL in
// the environment, as opposed to the client's default.
func urlGiven(kctx *kong.Context) bool {
	if os.Getenv("INTAKE_URL") != "" {
		return true
	}
	for _, p := range kctx.Path {
		if p.Flag != nil && p.Flag.Name == "server" {
			return true
		}
	}
	return false
}

// probe GETs target within timeout; any answer but 200 is not ready.
func probe(target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("healthcheck: %s: no answer within %s", target, timeout)
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // it repeats the method and target
		}
		return fmt.Errorf("healthcheck: %s: %w", target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	reason := strings.TrimSpace(strings.SplitN(string(body), "\n", 2)[0])
	if reason == "" {
		reason = http.StatusText(resp.StatusCode)
	}
	return fmt.Errorf("healthcheck: %s: not ready: %d %s", target, resp.StatusCode, reason)
}
