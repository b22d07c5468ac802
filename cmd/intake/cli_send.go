package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/provider/fixtures"
)

// SendCmd posts a correctly signed sample webhook of a provider to an
// endpoint, for trying a pipeline end to end without the provider.
type SendCmd struct {
	EndpointURL string        `name:"endpoint-url" help:"The endpoint's URL, as printed when it was created (URL-signing providers sign it exactly)."`
	Provider    string        `name:"provider" required:"" help:"Whose sample to send: standard, stripe, github, slack, shopify, … (intake send --provider list shows all)."`
	Type        string        `name:"type" help:"Event type, with or without the provider prefix (default: the provider's sample type)."`
	Secret      string        `name:"secret" env:"INTAKE_SEND_SECRET" help:"The connection's signing secret the sample is signed with (Discord and SendGrid sign with a private key: give a test key pair's, whose public key the connection holds; none takes no secret)."`
	Wait        time.Duration `name:"wait" default:"5s" help:"With a token, how long to wait for intake to verify and process the sample before saying it is still pending."`
	JSON        bool          `name:"json" help:"Print the result as JSON."`
}

// sendResult is what send prints with --json. State, Outcome and Error are
// the message's once it settled (empty without a token, or while pending).
type sendResult struct {
	Provider  string `json:"provider"`
	Type      string `json:"type"`
	Status    int    `json:"status"`
	Answer    string `json:"answer"`
	MessageID string `json:"message_id,omitempty"`
	State     string `json:"state,omitempty"`
	Outcome   string `json:"outcome,omitempty"`
	Error     string `json:"error,omitempty"`
}

// sendPoll is how often send asks whether its message has settled.
const sendPoll = 100 * time.Millisecond

// Run builds, signs and posts the sample.
func (c *SendCmd) Run(cl *Client) error {
	if c.Provider == "list" {
		return c.list(cl)
	}
	if c.EndpointURL == "" {
		return fmt.Errorf("--endpoint-url is required: the endpoint's URL, as printed when it was created")
	}
	if c.Secret == "" && fixtures.NeedsSecret(c.Provider) {
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
	sent := time.Now()
	resp, err := hc.Do(req.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("cannot reach the endpoint: %w", unwrapAll(err))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	res := sendResult{Provider: s.Provider, Type: s.Type, Status: resp.StatusCode, Answer: strings.TrimSpace(string(answer))}
	if !c.JSON {
		fmt.Fprintf(cl.stdout(), "sent %s (%s sample): %s\n", s.Type, s.Provider, resp.Status)
	}
	if resp.StatusCode >= 300 {
		if c.JSON {
			if err := c.printResult(cl, res); err != nil {
				return err
			}
		}
		return fmt.Errorf("the endpoint answered %s%s", resp.Status, sendHint(resp.StatusCode))
	}
	// The endpoint answers once the webhook is stored, naming nothing; its
	// signature is verified after. Find the message by its body's digest
	// and follow it, when there is a token to ask with.
	var followErr error
	if cl.Token != "" {
		var m api.Message
		m, followErr = c.follow(cl, digest(s.Body), sent)
		res.MessageID, res.State, res.Outcome = m.ID, m.State, m.Outcome
		res.Error = cmp.Or(m.ErrorMessage, m.ErrorCode)
	}
	if c.JSON {
		if err := c.printResult(cl, res); err != nil {
			return err
		}
	} else {
		c.printOutcome(cl, res, followErr)
	}
	return sendVerdict(res)
}

func (c *SendCmd) printResult(cl *Client, res sendResult) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return cl.printJSON(b)
}

// follow finds the message stored with the body's digest (the newest
// received since sent, less a little for clocks that differ), then polls
// it until it settles or --wait passes, and returns it as last seen.
func (c *SendCmd) follow(cl *Client, digest string, sent time.Time) (api.Message, error) {
	deadline := time.Now().Add(c.Wait)
	tick := time.NewTicker(sendPoll)
	defer tick.Stop()
	var id string
	for {
		var m api.Message
		if id == "" {
			var page api.List[api.Message]
			if _, err := cl.get("/api/v1/messages?limit=50", nil, &page); err != nil {
				return api.Message{}, err
			}
			for _, item := range page.Items {
				if item.Digest == digest && !item.ReceivedAt.Before(sent.Add(-time.Minute)) {
					id, m = item.ID, item
					break
				}
			}
		} else if _, err := cl.get(idPath("/api/v1/messages", id), nil, &m); err != nil {
			return api.Message{}, err
		}
		if id != "" && m.State != string(intake.MessageQueued) && m.State != string(intake.MessageProcessing) {
			return m, nil
		}
		if !time.Now().Before(deadline) {
			return m, nil
		}
		<-tick.C
	}
}

// digest is a body's digest as messages show it.
func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// printOutcome says what became of the stored webhook, as far as send
// could see.
func (c *SendCmd) printOutcome(cl *Client, res sendResult, followErr error) {
	w := cl.stdout()
	show := "intake messages show " + res.MessageID
	switch {
	case cl.Token == "":
		fmt.Fprintln(w, "stored; intake verifies its signature in the background: with a token (--token or INTAKE_TOKEN) send follows it to its outcome, which `intake messages list` shows too")
	case followErr != nil:
		fmt.Fprintf(w, "stored; cannot follow it (%v): `intake messages list` shows the outcome\n", followErr)
	case res.MessageID == "":
		fmt.Fprintf(w, "stored; it was not among the messages the token sees within %s: `intake messages list` shows the outcome\n", c.Wait)
	case res.State == string(intake.MessageQueued) || res.State == string(intake.MessageProcessing):
		fmt.Fprintf(w, "message %s: still %s after %s; `%s` shows the outcome\n", res.MessageID, res.State, c.Wait, show)
	default:
		line := fmt.Sprintf("message %s: %s", res.MessageID, res.State)
		if res.Outcome != "" {
			line += ": " + res.Outcome
		}
		if res.Error != "" {
			line += " (" + res.Error + ")"
		}
		fmt.Fprintln(w, line)
	}
}

// sendVerdict fails a sample intake did not accept once it verified it.
func sendVerdict(res sendResult) error {
	switch res.State {
	case string(intake.MessageIgnored):
		if res.Outcome == intake.OutcomeSignature {
			return fmt.Errorf("the sample was ignored: its signature did not verify with the connection's secrets; check --secret")
		}
		return fmt.Errorf("the sample was ignored: %s", res.Outcome)
	case string(intake.MessageFailed), string(intake.MessageDead):
		return fmt.Errorf("the sample could not be processed: %s", cmp.Or(res.Error, res.State))
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
