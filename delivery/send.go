package delivery

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/tracing"
)

// maxDrain is the most of an answer read past the part kept, and thrown
// away, so that the connection serves the next call; an answer longer
// still closes it.
const maxDrain = 60 << 10

// answerBufs hold the part of an answer a call keeps, one buffer a call.
var answerBufs = sync.Pool{New: func() any { return new([intake.MaxResponseBody]byte) }}

// Options configure a Sender.
type Options struct {
	Timeout       time.Duration // per delivery (default 10s)
	MaxRetryAfter time.Duration // cap on a consumer's Retry-After (default 1h)
	Policy        Policy
	UserAgent     string
	// Brokers are the destinations other than HTTP the Sender publishes
	// to (delivery/broker's); nil: HTTP only.
	Brokers Brokers
}

// Sender delivers events to consumers: posted over HTTP, or published to
// a broker over a connection kept per consumer.
type Sender struct {
	client *http.Client
	opts   Options
	dial   Dialer
	pubs   publishers
}

// NewSender returns a Sender whose connections obey opts.Policy and that
// never follows redirects.
func NewSender(opts Options) *Sender {
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxRetryAfter == 0 {
		opts.MaxRetryAfter = time.Hour
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "intake"
	}
	dial := opts.Policy.Dialer(opts.Timeout)
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
	}
	return &Sender{opts: opts, dial: dial, pubs: publishers{m: map[string]*pooled{}}, client: &http.Client{
		Transport:     transport,
		Timeout:       opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Result is what one delivery attempt came to.
type Result struct {
	Outcome    string // handled, ignored or retry
	StatusCode int
	Latency    time.Duration
	Err        string
	RetryAfter time.Duration // the consumer asked to wait (capped)
	// Response is an HTTP consumer's answer as kept; nil when none came
	// (and always from a broker: a peer's bytes are never kept).
	Response *intake.DeliveryResponse
}

// SendBody posts body (a transform's output, or the envelope) as event id,
// signed under each of secrets (the current one first, then one a rotation
// keeps for a while): the Standard Webhooks signatures, space-separated,
// cover exactly the bytes sent. header holds extra headers (a
// transform's); Content-Type is application/json unless header sets
// another. The webhook-* headers are always the sender's own. The answer
// is classified: 2xx handled; 2xx with {"outcome":"ignored"} ignored;
// anything else, a timeout or no connection, retry.
func (s *Sender) SendBody(ctx context.Context, url string, secrets []string, id string, body []byte, header http.Header, now time.Time) Result {
	h, err := signed(secrets, id, body, header, now)
	if err != nil {
		return Result{Outcome: intake.DeliveryRetry, Err: err.Error()}
	}
	return s.Post(ctx, url, body, h, now)
}

// Deliver delivers p to a consumer at url, signed under each of secrets
// as SendBody signs: posted when url is http or https, else published to
// the broker it names over the consumer's kept connection, with the same
// headers as the message's headers or properties.
func (s *Sender) Deliver(ctx context.Context, consumerID, url string, secrets []string, p Publication, now time.Time) Result {
	h, err := signed(secrets, p.ID, p.Body, p.Header, now)
	if err != nil {
		return Result{Outcome: intake.DeliveryRetry, Err: err.Error()}
	}
	if !s.opts.Brokers.Names(url) {
		return s.Post(ctx, url, p.Body, h, now)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	tracing.Inject(ctx, h)
	p.Header = h
	start := time.Now()
	pub, err := s.pubs.get(consumerID, url, func() (Publisher, error) { return s.opts.Brokers.open(url, s.dial, s.opts.Timeout) })
	if err != nil {
		return Result{Outcome: intake.DeliveryRetry, Latency: time.Since(start), Err: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	r := pub.Publish(ctx, p)
	if r.Latency == 0 {
		r.Latency = time.Since(start)
	}
	return r
}

// Forget closes the connection kept for a consumer (disabled, deleted, or
// its url changed); the next delivery to it opens one afresh.
func (s *Sender) Forget(consumerID string) { s.pubs.forget(consumerID) }

// Close closes every connection kept to a broker.
func (s *Sender) Close() error { return s.pubs.closeAll() }

// signed returns header (cloned) with the Standard Webhooks headers of
// body as event id, signed under each of secrets: the signatures,
// space-separated, cover exactly the bytes sent.
func signed(secrets []string, id string, body []byte, header http.Header, now time.Time) (http.Header, error) {
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		sig, err := Sign(secret, id, now.Unix(), body)
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, sig)
	}
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", strings.Join(sigs, " "))
	return h, nil
}

// Post posts body to url with header (Content-Type application/json unless
// header sets another), through the address policy, and classifies the
// answer as SendBody does: for a receiver that verifies no signature.
func (s *Sender) Post(ctx context.Context, url string, body []byte, header http.Header, now time.Time) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Outcome: intake.DeliveryRetry, Err: "bad consumer url"}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	req.Header.Set("User-Agent", s.opts.UserAgent)
	tracing.Inject(ctx, req.Header)
	var seen seen
	req = req.WithContext(httptrace.WithClientTrace(ctx, seen.trace()))
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return Result{Outcome: intake.DeliveryRetry, Latency: time.Since(start), Err: describe(err, &seen)}
	}
	defer resp.Body.Close()
	buf := answerBufs.Get().(*[intake.MaxResponseBody]byte)
	defer answerBufs.Put(buf)
	n, err := io.ReadFull(resp.Body, buf[:])
	truncated := false
	if err == nil {
		// The buffer is full: whatever follows is not kept.
		rest, _ := io.CopyN(io.Discard, resp.Body, maxDrain)
		truncated = rest > 0
	}
	answer := buf[:n]
	r := Result{StatusCode: resp.StatusCode, Latency: time.Since(start), Response: keep(resp, answer, truncated)}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.Outcome = intake.DeliveryHandled
		var a struct{ Outcome string }
		if json.Unmarshal(answer, &a) == nil && a.Outcome == intake.DeliveryIgnored {
			r.Outcome = intake.DeliveryIgnored
		}
	default:
		r.Outcome = intake.DeliveryRetry
		r.Err = "consumer answered " + strconv.Itoa(resp.StatusCode)
		r.RetryAfter = min(retryAfter(resp.Header.Get("Retry-After"), now), s.opts.MaxRetryAfter)
	}
	return r
}

// keptHeaders are the only headers of an answer a delivery keeps: none
// that could carry a credential.
var keptHeaders = [...]string{"Content-Type", "Retry-After"}

// keep is the answer as a delivery keeps it (DESIGN §20): its status, the
// kept headers, and body, its first bytes, as text when they are UTF-8
// without NUL, else base64.
func keep(resp *http.Response, body []byte, truncated bool) *intake.DeliveryResponse {
	kept := &intake.DeliveryResponse{Status: resp.StatusCode, BodyTruncated: truncated, BodyEncoding: "text"}
	for _, name := range keptHeaders {
		if v := resp.Header.Get(name); v != "" {
			if kept.Headers == nil {
				kept.Headers = make(map[string]string, len(keptHeaders))
			}
			kept.Headers[strings.ToLower(name)] = v
		}
	}
	text := body
	if truncated {
		text = withoutCutRune(body)
	}
	if utf8.Valid(text) && bytes.IndexByte(text, 0) < 0 {
		kept.Body = string(text)
	} else {
		kept.Body, kept.BodyEncoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return kept
}

// withoutCutRune is b without the first bytes of a character its end cut
// in two.
func withoutCutRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// retryAfter reads Retry-After as seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
