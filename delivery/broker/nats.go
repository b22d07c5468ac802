package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/redact"
)

// A nats consumer publishes to JetStream (DESIGN §12):
//
//	nats://[user:pass@]host[:4222]/<subject>[?stream=<STREAM>][&tls=1]
//
// The path is the subject, which may hold "{type}" and "{key}". A call is
// handled once a stream acknowledged the message (a PubAck), with the
// stream named by ?stream= when given; Nats-Msg-Id is the event id, so a
// republish within the stream's duplicate window is stored once.

var natsKind = delivery.Kind{Check: checkNATS, Open: openNATS}

// natsPort is the port of a nats url that names none.
const natsPort = "4222"

// errStreamNotMatch is JetStream's code for "expected stream does not
// match": ?stream= named another stream than the one capturing the subject.
const errStreamNotMatch jetstream.ErrorCode = 10060

// natsTarget is what a checked nats url says.
type natsTarget struct {
	addr    string // host:port
	subject string // a template: may hold {type} and {key}
	stream  string
	tls     bool
	user    *url.Userinfo
}

func parseNATS(u *url.URL) (natsTarget, error) {
	bad := func(format string, args ...any) (natsTarget, error) {
		return natsTarget{}, intake.Errorf(intake.EINVALID, "url %s: "+format, append([]any{redact.URL(u.String())}, args...)...)
	}
	t := natsTarget{user: u.User}
	port := u.Port()
	if port == "" {
		port = natsPort
	}
	t.addr = net.JoinHostPort(u.Hostname(), port)
	t.subject = strings.TrimPrefix(u.Path, "/")
	if t.subject == "" {
		return bad("a NATS url needs a subject as its path, as in nats://host:4222/intake.events")
	}
	if err := subjectProblem(strings.NewReplacer("{type}", "t", "{key}", "k").Replace(t.subject)); err != "" {
		return bad("subject %q %s", t.subject, err)
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "stream":
			if v == "" || strings.ContainsAny(v, " \t\r\n.*>/\\") {
				return bad("stream %q is not a JetStream stream name (no spaces, dots, '*', '>' or slashes)", v)
			}
			t.stream = v
		case "tls":
			switch v {
			case "1", "true":
				t.tls = true
			case "0", "false", "":
			default:
				return bad("tls=%q: use tls=1 or tls=0", v)
			}
		default:
			return bad("unknown parameter %q (a NATS url takes stream and tls)", k)
		}
	}
	return t, nil
}

// subjectProblem says what makes s no subject to publish to, "" when it is
// one.
func subjectProblem(s string) string {
	switch {
	case strings.ContainsAny(s, " \t\r\n"):
		return "has whitespace, which a NATS subject cannot hold"
	case strings.ContainsAny(s, "*>"):
		return "has a wildcard ('*' or '>'): messages are published to one subject"
	case strings.ContainsAny(s, "{}"):
		return "has a placeholder other than {type} and {key}"
	case strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, ".."):
		return "has an empty token (a leading, trailing or doubled '.')"
	}
	return ""
}

func checkNATS(u *url.URL) error {
	_, err := parseNATS(u)
	return err
}

// natsPublisher keeps one connection to a NATS server. It makes no
// reconnection of its own in the background: a connection that broke is
// closed, and the next Publish makes a new one.
type natsPublisher struct {
	t       natsTarget
	dial    delivery.Dialer
	timeout time.Duration

	// turn is held while the connection is looked at or made, so that
	// one Publish makes it and the others wait for it (or their context).
	turn   chan struct{}
	nc     *nats.Conn
	js     jetstream.JetStream
	closed bool
	mu     sync.Mutex // guards nc and closed for Close
}

func openNATS(u *url.URL, dial delivery.Dialer, timeout time.Duration) (delivery.Publisher, error) {
	t, err := parseNATS(u)
	if err != nil {
		return nil, err
	}
	n := &natsPublisher{t: t, dial: dial, timeout: timeout, turn: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := n.session(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// session returns the JetStream context over the current connection,
// making the connection when there is none or it broke.
func (n *natsPublisher) session(ctx context.Context) (jetstream.JetStream, error) {
	select {
	case n.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("connect to NATS at %s: %w", n.t.addr, ctx.Err())
	}
	defer func() { <-n.turn }()
	n.mu.Lock()
	closed, nc, js := n.closed, n.nc, n.js
	n.mu.Unlock()
	if closed {
		return nil, errors.New("the NATS publisher is closed")
	}
	if nc != nil && nc.IsConnected() {
		return js, nil
	}
	if nc != nil {
		nc.Close()
	}
	nc, err := n.connect(ctx)
	if err != nil {
		return nil, err
	}
	js, err = jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("NATS at %s: %s", n.t.addr, natsFailure(err))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		nc.Close()
		return nil, errors.New("the NATS publisher is closed")
	}
	n.nc, n.js = nc, js
	return js, nil
}

// connect makes a connection through the address policy's dialer, bounded
// by ctx: the dial, the TLS handshake and NATS's greeting.
func (n *natsPublisher) connect(ctx context.Context) (*nats.Conn, error) {
	left := n.timeout
	if d, ok := ctx.Deadline(); ok {
		left = min(left, time.Until(d))
	}
	if left <= 0 {
		return nil, fmt.Errorf("connect to NATS at %s: %w", n.t.addr, context.DeadlineExceeded)
	}
	d := &natsDialer{ctx: ctx, dial: n.dial}
	opts := []nats.Option{
		nats.Name("intake"),
		nats.SetCustomDialer(d),
		nats.SkipHostLookup(), // the policy's dialer resolves, and checks each address
		nats.NoReconnect(),
		nats.Timeout(left),
		nats.NoCallbacksAfterClientClose(),
	}
	if n.t.user != nil {
		if pass, ok := n.t.user.Password(); ok {
			opts = append(opts, nats.UserInfo(n.t.user.Username(), pass))
		} else {
			opts = append(opts, nats.Token(n.t.user.Username()))
		}
	}
	if n.t.tls {
		opts = append(opts, nats.Secure())
	}
	// The credentials go as options, never in the url, so that no error
	// the library makes can print them.
	nc, err := nats.Connect("nats://"+n.t.addr, opts...)
	if err != nil {
		if derr := d.failed(); derr != nil && errors.Is(err, nats.ErrNoServers) {
			err = derr
		}
		return nil, fmt.Errorf("connect to NATS at %s: %s", n.t.addr, natsFailure(err))
	}
	return nc, nil
}

// natsSentinels are the client's own errors, whose words are fixed; any
// other error it makes may quote what the server sent (an -ERR line, an
// INFO that is not JSON).
var natsSentinels = []error{
	nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired,
	nats.ErrPermissionViolation, nats.ErrNoInfoReceived, nats.ErrStaleConnection, nats.ErrMaxConnectionsExceeded,
	nats.ErrConnectionClosed, nats.ErrNoServers, nats.ErrTimeout, nats.ErrSecureConnRequired, nats.ErrSecureConnWanted,
	nats.ErrNoResponders, nats.ErrMaxPayload, nats.ErrHeadersNotSupported, nats.ErrConnectionDraining,
	nats.ErrConnectionReconnecting, nats.ErrInvalidConnection, nats.ErrBadHeaderMsg,
}

// natsFailure names what failed from a fixed set: the client's own error,
// JetStream's status and error code, else the connection's failure.
// Never the server's words.
func natsFailure(err error) string {
	var apiErr *jetstream.APIError
	for _, s := range natsSentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("JetStream answered %d (error code %d)", apiErr.Code, apiErr.ErrorCode)
	}
	return delivery.BrokerFailure(err)
}

// natsDialer is the NATS client's dialer: the address policy's, bounded
// by the context of the connection being made.
type natsDialer struct {
	ctx  context.Context
	dial delivery.Dialer

	mu   sync.Mutex
	last error // the library hides a refused connection behind "no servers"
}

func (d *natsDialer) Dial(network, addr string) (net.Conn, error) {
	c, err := d.dial(d.ctx, network, addr)
	if err != nil {
		d.mu.Lock()
		d.last = err
		d.mu.Unlock()
	}
	return c, err
}

func (d *natsDialer) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// Publish publishes p to JetStream and is handled once a stream
// acknowledged it; a duplicate (the same event id within the stream's
// window) is handled too, as it is stored once.
func (n *natsPublisher) Publish(ctx context.Context, p delivery.Publication) delivery.Result {
	start := time.Now()
	_, err := n.publish(ctx, p)
	if err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Latency: time.Since(start), Err: err.Error()}
	}
	return delivery.Result{Outcome: intake.DeliveryHandled, Latency: time.Since(start)}
}

func (n *natsPublisher) publish(ctx context.Context, p delivery.Publication) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	// An ordering key is one token of the subject, whatever it holds.
	keyed := p
	keyed.OrderKey = keyToken.Replace(p.OrderKey)
	subject := delivery.Expand(n.t.subject, keyed)
	if why := subjectProblem(subject); why != "" {
		return nil, fmt.Errorf("subject %q %s", subject, why)
	}
	js, err := n.session(ctx)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: subject, Data: p.Body, Header: nats.Header{}}
	for k, vs := range p.Header {
		k = strings.ToLower(k)
		// Nats-* headers steer JetStream (expected stream or sequence,
		// rollup, TTL): only intake's own are set.
		if strings.HasPrefix(k, "nats-") {
			continue
		}
		msg.Header[k] = append(msg.Header[k], vs...)
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(p.ID)}
	if n.t.stream != "" {
		opts = append(opts, jetstream.WithExpectStream(n.t.stream))
	}
	ack, err := js.PublishMsg(ctx, msg, opts...)
	if err == nil {
		return ack, nil
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		return nil, fmt.Errorf("no JetStream stream captures subject %q at %s", subject, n.t.addr)
	case errors.As(err, &apiErr) && apiErr.ErrorCode == errStreamNotMatch:
		return nil, fmt.Errorf("subject %q is not captured by stream %q at %s", subject, n.t.stream, n.t.addr)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("NATS at %s did not acknowledge within %s", n.t.addr, n.timeout)
	}
	return nil, fmt.Errorf("publish to NATS at %s: %s", n.t.addr, natsFailure(err))
}

// keyToken makes an ordering key one token of a subject.
var keyToken = strings.NewReplacer(".", "_", " ", "_", "\t", "_", "\r", "_", "\n", "_", "*", "_", ">", "_")

// Close closes the connection; a Publish after it is refused.
func (n *natsPublisher) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	if n.nc != nil {
		n.nc.Close()
		n.nc, n.js = nil, nil
	}
	return nil
}
