package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/delivery"
)

// ListenCmd forwards the org's events, as they are routed, to a local URL,
// signed as a consumer delivery: the local loop for developing a consumer.
// It follows the admin API's event stream and resumes where it left off
// after a disconnect.
type ListenCmd struct {
	Endpoint  string        `name:"endpoint" help:"Only events of webhooks received at this endpoint id (default: all of the org's)."`
	ForwardTo string        `name:"forward-to" required:"" help:"Local URL each event is posted to, e.g. http://localhost:3000/hooks."`
	Secret    string        `name:"secret" env:"INTAKE_LISTEN_SECRET" help:"Signing secret (whsec_…) of the forwarded events; default: a new one, printed at start."`
	After     string        `name:"after" help:"Start after this event id rather than now."`
	JSON      bool          `name:"json" help:"Print one JSON object per forwarded event instead of a line of text."`
	Timeout   time.Duration `name:"timeout" default:"10s" help:"How long the local URL may take to answer."`
	Retry     time.Duration `name:"retry" default:"1s" hidden:"" help:"First wait before reconnecting."`

	// ctx ends the command; nil: SIGINT or SIGTERM does. Tests set it.
	ctx context.Context
}

// listenRetryMax caps the wait between reconnection attempts.
const listenRetryMax = 30 * time.Second

// forwarded is what listen prints for each event.
type forwarded struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
}

// Run follows the stream until interrupted.
func (c *ListenCmd) Run(cl *Client) error {
	if cl.Token == "" {
		return errors.New("no token: set --token or INTAKE_TOKEN to an org's API key (or the staff token)")
	}
	if u, err := url.Parse(c.ForwardTo); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--forward-to must be an http(s) URL, e.g. http://localhost:3000/hooks")
	}
	secret := c.Secret
	if secret == "" {
		secret = delivery.NewSecret()
	}
	if _, err := delivery.Sign(secret, "check", 0, nil); err != nil {
		return fmt.Errorf("--secret: %w", err)
	}
	ctx := c.ctx
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	fmt.Fprintf(cl.stderr(), "intake: forwarding events to %s, signed with %s\n", c.ForwardTo, secret)
	if c.Secret == "" {
		fmt.Fprintln(cl.stderr(), "intake: pass --secret to keep this signing secret across runs")
	}

	l := &listener{cmd: c, cl: cl, secret: secret, last: c.After, seen: newRecent(10_000),
		forward: &http.Client{Timeout: c.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	wait := c.Retry
	for {
		connected, err := l.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var refused *refusal
		if errors.As(err, &refused) {
			return refused
		}
		if connected {
			wait = c.Retry
		}
		if l.serverRetry > 0 && connected {
			wait = l.serverRetry
		}
		fmt.Fprintf(cl.stderr(), "intake: stream lost (%v); reconnecting in %s\n", err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, listenRetryMax)
	}
}

// refusal is an answer that reconnecting will not change (a bad token, an
// unknown endpoint).
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// listener is one run of listen: the last event forwarded, and the ids
// already forwarded (a resumed stream may repeat its last few seconds).
type listener struct {
	cmd         *ListenCmd
	cl          *Client
	secret      string
	forward     *http.Client
	last        string
	connects    int
	seen        *recent
	serverRetry time.Duration
}

// follow opens the stream and forwards its events until it ends. connected
// reports whether the server accepted the stream.
func (l *listener) follow(ctx context.Context) (connected bool, err error) {
	q := url.Values{}
	setParam(q, "endpoint_id", l.cmd.Endpoint)
	u := strings.TrimRight(l.cl.Server, "/") + "/api/v1/events/stream"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, &refusal{msg: fmt.Sprintf("--server: %v", err)}
	}
	req.Header.Set("Authorization", "Bearer "+l.cl.Token)
	req.Header.Set("Accept", "text/event-stream")
	if l.last != "" {
		req.Header.Set("Last-Event-ID", l.last)
	}
	hc := l.cl.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("cannot reach %s: %w", l.cl.Server, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		msg := resp.Status
		var e api.ErrorBody
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
			return false, &refusal{msg: msg}
		}
		return false, errors.New(msg)
	}
	switch {
	case l.connects == 0:
		fmt.Fprintln(l.cl.stderr(), "intake: ready; waiting for events (Ctrl-C to stop)")
	case l.last != "":
		fmt.Fprintf(l.cl.stderr(), "intake: reconnected; resuming after %s\n", l.last)
	default:
		fmt.Fprintln(l.cl.stderr(), "intake: reconnected")
	}
	l.connects++
	err = readSSE(resp.Body, func(m sseMessage) {
		if m.retry > 0 {
			l.serverRetry = m.retry
		}
		if m.id == "" || m.data == "" {
			return
		}
		if !l.seen.add(m.id) {
			l.last = m.id // a repeat from the resumed stream's overlap
			return
		}
		l.deliver(ctx, m.id, []byte(m.data))
		l.last = m.id
	})
	if err == nil {
		err = errors.New("the server closed the stream")
	}
	return true, err
}

// deliver posts one event to the local URL, signed as a consumer delivery,
// and prints how it went.
func (l *listener) deliver(ctx context.Context, id string, body []byte) {
	var env struct{ Type string }
	_ = json.Unmarshal(body, &env) // the type is for the printout only
	out := forwarded{ID: id, Type: env.Type}
	now := time.Now()
	sig, err := delivery.Sign(l.secret, id, now.Unix(), body)
	if err == nil {
		var req *http.Request
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, l.cmd.ForwardTo, bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("User-Agent", "intake-listen")
			req.Header.Set("webhook-id", id)
			req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
			req.Header.Set("webhook-signature", sig)
			var resp *http.Response
			if resp, err = l.forward.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				out.Status = resp.StatusCode
			}
		}
	}
	out.LatencyMS = float64(time.Since(now).Microseconds()) / 1000
	if err != nil {
		out.Error = unwrapAll(err).Error()
	}
	if l.cmd.JSON {
		b, _ := json.Marshal(out) // plain strings and numbers always marshal
		fmt.Fprintf(l.cl.stdout(), "%s\n", b)
		return
	}
	result := strconv.Itoa(out.Status)
	if out.Error != "" {
		result = "failed: " + out.Error
	}
	fmt.Fprintf(l.cl.stdout(), "%s  %-40s %s → %s (%.0f ms)\n", now.UTC().Format(time.TimeOnly), out.Type, out.ID, result, out.LatencyMS)
}

// sseMessage is one Server-Sent Events message.
type sseMessage struct {
	id    string
	data  string
	retry time.Duration
}

// readSSE reads a Server-Sent Events stream, calling on for each message,
// until the stream ends (nil) or fails.
func readSSE(r io.Reader, on func(sseMessage)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20) // an envelope holds up to 64 KiB of data, escaped
	var m sseMessage
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			m.data = strings.Join(data, "\n")
			on(m)
			m, data = sseMessage{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: the server's heartbeat
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			m.id = value
		case "data":
			data = append(data, value)
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
				m.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	return sc.Err()
}

// recent remembers the last n ids added.
type recent struct {
	ids  map[string]bool
	ring []string
	next int
}

func newRecent(n int) *recent { return &recent{ids: map[string]bool{}, ring: make([]string, n)} }

// add records id and reports whether it was new.
func (r *recent) add(id string) bool {
	if r.ids[id] {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.ids, old)
	}
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.ids[id] = true
	return true
}
