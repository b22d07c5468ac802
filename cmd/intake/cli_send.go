package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/provider/fixtures"
)

// SendCmd posts a correctly signed sample webhook of a provider to an
// endpoint, for trying a pipeline end to end without the provider.
type SendCmd struct {
	EndpointURL string `name:"endpoint-url" help:"The endpoint's URL, as printed when it was created (URL-signing providers sign it exactly)."`
	Provider    string `name:"provider" required:"" help:"Whose sample to send: standard, stripe, github, slack, shopify, … (intake send --provider list shows all)."`
	Type        string `name:"type" help:"Event type, with or without the provider prefix (default: the provider's sample type)."`
	Secret      string `name:"secret" env:"INTAKE_SEND_SECRET" help:"The connection's signing secret the sample is signed with."`
	JSON        bool   `name:"json" help:"Print the result as JSON."`
}

// sendResult is what send prints with --json.
type sendResult struct {
	Provider string `json:"provider"`
	Type     string `json:"type"`
	Status   int    `json:"status"`
	Answer   string `json:"answer"`
}

// Run builds, signs and posts the sample.
func (c *SendCmd) Run(cl *Client) error {
	if c.Provider == "list" {
		return c.list(cl)
	}
	if c.EndpointURL == "" {
		return fmt.Errorf("--endpoint-url is required: the endpoint's URL, as printed when it was created")
	}
	if c.Secret == "" {
		return fmt.Errorf("--secret is required: the connection's signing secret, so the sample verifies")
	}
	s, err := fixtures.Build(c.Provider, fixtures.Options{Type: c.Type, Secret: c.Secret, URL: c.EndpointURL, Now: time.Now()})
	if err != nil {
		return err
	}
	req, err := s.Request(c.EndpointURL)
	if err != nil {
		return fmt.Errorf("--endpoint-url: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := cl.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("cannot reach the endpoint: %w", unwrapAll(err))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	res := sendResult{Provider: s.Provider, Type: s.Type, Status: resp.StatusCode, Answer: strings.TrimSpace(string(answer))}
	if c.JSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		if err := cl.printJSON(b); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(cl.stdout(), "sent %s (%s sample): %s\n", s.Type, s.Provider, resp.Status)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("the endpoint answered %s%s", resp.Status, sendHint(resp.StatusCode))
	}
	return nil
}

// list prints the providers that have a sample, with the type each sends
// by default.
func (c *SendCmd) list(cl *Client) error {
	type sample struct {
		Provider    string `json:"provider"`
		DefaultType string `json:"default_type"`
	}
	var all []sample
	rows := make([][]string, 0, len(fixtures.Providers()))
	for _, p := range fixtures.Providers() {
		all = append(all, sample{p, p + "." + fixtures.DefaultType(p)})
		rows = append(rows, []string{p, p + "." + fixtures.DefaultType(p)})
	}
	if c.JSON {
		b, err := json.Marshal(api.List[sample]{Items: all})
		if err != nil {
			return err
		}
		return cl.printJSON(b)
	}
	return cl.printTable([]string{"PROVIDER", "DEFAULT TYPE"}, rows)
}

// sendHint says what an endpoint's refusal usually means.
func sendHint(status int) string {
	switch status {
	case http.StatusNotFound:
		return ": no enabled endpoint has this URL"
	case http.StatusRequestEntityTooLarge:
		return ": the sample is over the endpoint's body limit"
	case http.StatusTooManyRequests:
		return ": the endpoint's rate limit was reached; try again shortly"
	}
	return ""
}

// unwrapAll is the innermost error, without the URL (which holds the
// endpoint's token) that net/http wraps around it.
func unwrapAll(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
