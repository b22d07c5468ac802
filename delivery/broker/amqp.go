package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/redact"
)

// An amqp consumer publishes to a RabbitMQ exchange or queue (DESIGN §12):
//
//	amqp://user:pass@host:5672/vhost?exchange=intake&routing_key=events.{type}
//	amqp://user:pass@host:5672/vhost?queue=billing
//
// A queue url publishes through the default exchange with the queue's name
// as routing key. Every message is mandatory and confirmed: a message no
// queue takes is returned by the broker, and that is a failed call.

var amqpKind = delivery.Kind{Check: checkAMQP, Open: openAMQP}

// amqpParams are the query parameters an amqp url may carry.
var amqpParams = map[string]bool{
	"exchange": true, "queue": true, "routing_key": true,
	"heartbeat": true, "server_name_indication": true,
}

// amqpExchangeName is what RabbitMQ accepts as an exchange name.
var amqpExchangeName = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// amqpMaxName is the longest exchange, queue or routing key (an AMQP
// short string).
const amqpMaxName = 255

// amqpMaxIdle is how many confirm-mode channels a publisher keeps open
// between publishes.
const amqpMaxIdle = 16

// amqpTarget is where an amqp url publishes.
type amqpTarget struct {
	exchange string // "" for the default exchange
	key      string // the routing key, perhaps with {type} and {key}
}

// checkAMQP refuses an amqp url that names no exchange nor queue, names
// both, or carries a parameter intake does not use.
func checkAMQP(u *url.URL) error {
	_, err := amqpTargetOf(u)
	return err
}

func amqpTargetOf(u *url.URL) (amqpTarget, error) {
	bad := func(format string, args ...any) (amqpTarget, error) {
		return amqpTarget{}, intake.Errorf(intake.EINVALID, "url %s: %s", redact.URL(u.String()), fmt.Sprintf(format, args...))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("port %q is not a port number", p)
		}
	}
	if u.Fragment != "" {
		return bad("an amqp url has no #fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("the query does not parse: %v", err)
	}
	for name, vs := range q {
		switch {
		case name == "certfile" || name == "keyfile" || name == "cacertfile":
			return bad("parameter %q names a file on intake's host, which a consumer's url may not", name)
		case !amqpParams[name]:
			return bad("unknown parameter %q (amqp urls take exchange, routing_key, queue, heartbeat and server_name_indication)", name)
		case len(vs) > 1:
			return bad("parameter %q is given %d times", name, len(vs))
		}
	}
	if h := q.Get("heartbeat"); h != "" {
		if _, err := strconv.ParseUint(h, 10, 16); err != nil {
			return bad("heartbeat %q is not a number of seconds", h)
		}
	}
	exchange, queue, key := q.Get("exchange"), q.Get("queue"), q.Get("routing_key")
	switch {
	case exchange != "" && queue != "":
		return bad("names both an exchange and a queue: give exchange (with routing_key) or queue, not both")
	case exchange == "" && queue == "":
		return bad("names no exchange nor queue: add ?exchange=<name>&routing_key=<key> or ?queue=<name>")
	case queue != "":
		if q.Has("routing_key") {
			return bad("routing_key goes with exchange: a queue url publishes with the queue's name as routing key")
		}
		if len(queue) > amqpMaxName {
			return bad("queue name is longer than %d bytes", amqpMaxName)
		}
		return amqpTarget{key: queue}, nil
	}
	if !amqpExchangeName.MatchString(exchange) || len(exchange) > amqpMaxName {
		return bad("exchange %q is not an exchange name (letters, digits, '-', '_', '.', ':', at most %d)", exchange, amqpMaxName)
	}
	if key == "" {
		key = "{type}"
	}
	if len(key) > amqpMaxName {
		return bad("routing_key is longer than %d bytes", amqpMaxName)
	}
	return amqpTarget{exchange: exchange, key: key}, nil
}

// openAMQP returns a publisher to u. It connects on the first Publish.
func openAMQP(u *url.URL, dial delivery.Dialer, timeout time.Duration) (delivery.Publisher, error) {
	t, err := amqpTargetOf(u)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	q := u.Query()
	conn := *u
	conn.Fragment = ""
	conn.RawQuery = ""
	if h := q.Get("heartbeat"); h != "" {
		conn.RawQuery = url.Values{"heartbeat": {h}}.Encode()
	}
	p := &amqpPublisher{
		url:     conn.String(),
		given:   u,
		shown:   redact.URL(u.String()),
		target:  t,
		dial:    dial,
		timeout: timeout,
		gate:    make(chan struct{}, 1),
	}
	if strings.EqualFold(u.Scheme, "amqps") {
		name := q.Get("server_name_indication")
		if name == "" {
			name = u.Hostname()
		}
		p.tls = &tls.Config{ServerName: name, MinVersion: tls.VersionTLS12}
	}
	return p, nil
}

// amqpPublisher publishes over one connection, re-made when it breaks,
// on channels in confirm mode, each carrying one publish at a time so that
// a message's return and confirm are its own.
type amqpPublisher struct {
	url     string   // what the client dials: the url without intake's parameters
	shown   string   // the url as errors show it
	given   *url.URL // the url as registered, whose password errors never show
	target  amqpTarget
	dial    delivery.Dialer
	timeout time.Duration
	tls     *tls.Config

	gate chan struct{} // held while connecting

	mu     sync.Mutex
	conn   *amqpConn
	old    []*amqpConn // replaced connections, perhaps still closing
	closed bool
}

// amqpConn is one connection and its idle channels.
type amqpConn struct {
	c    *amqp.Connection
	idle chan *amqpChannel
	dead atomic.Bool // given up on: being closed
	once sync.Once
}

// usable reports whether publishes may still use the connection.
func (c *amqpConn) usable() bool {
	return !c.dead.Load() && !c.c.IsClosed()
}

// close gives the connection up and closes it, waiting at most wait for
// the broker's answer; a second call waits for the first.
func (c *amqpConn) close(wait time.Duration) error {
	c.dead.Store(true)
	var err error
	c.once.Do(func() { err = c.c.CloseDeadline(time.Now().Add(wait)) })
	if errors.Is(err, amqp.ErrClosed) {
		return nil
	}
	return err
}

// amqpChannel is a channel in confirm mode with what the broker returned
// or why it closed the channel.
type amqpChannel struct {
	ch      *amqp.Channel
	returns chan amqp.Return
	closes  chan *amqp.Error
}

var errAMQPClosed = errors.New("publisher is closed")

// Publish sends p and waits for the broker's confirm, within the timeout.
func (p *amqpPublisher) Publish(ctx context.Context, pub delivery.Publication) delivery.Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	retry := func(format string, args ...any) delivery.Result {
		msg := redact.Password(p.shown+": "+fmt.Sprintf(format, args...), p.given)
		return delivery.Result{Outcome: intake.DeliveryRetry, Latency: time.Since(start), Err: msg}
	}

	conn, err := p.connection(ctx)
	if err != nil {
		return retry("%s", p.describe(ctx, err))
	}
	// A publish the broker does not confirm in time leaves the connection
	// in doubt: close it (which also ends a call blocked on it) and
	// connect again on the next publish.
	stop := context.AfterFunc(ctx, func() { _ = conn.close(time.Second) })
	defer func() {
		if ctx.Err() == nil {
			stop()
			return
		}
		conn.dead.Store(true) // before the next publish looks
		if stop() {
			go conn.close(time.Second)
		}
	}()

	ch, err := conn.channel()
	if err != nil {
		return retry("open a channel: %s", p.describe(ctx, err))
	}
	key := delivery.Expand(p.target.key, pub)
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, p.target.exchange, key, true, false, amqpMessage(pub, start))
	if err != nil {
		return retry("publish: %s", p.describe(ctx, err))
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		return retry("no publisher confirm within %s", p.timeout)
	}
	if !acked {
		select {
		case e := <-ch.closes:
			if e != nil {
				return retry("the broker closed the channel: %s", p.failure(e))
			}
		default:
		}
		if ch.ch.IsClosed() || !conn.usable() {
			return retry("the connection closed before the broker confirmed the message")
		}
		conn.release(ch)
		return retry("the broker refused the message (nack)")
	}
	select {
	case r := <-ch.returns:
		conn.release(ch)
		where := "the default exchange"
		if r.Exchange != "" {
			where = fmt.Sprintf("exchange %q", r.Exchange)
		}
		return retry("unroutable: no queue is bound for routing key %q on %s (%s)", r.RoutingKey, where, amqpReply(int(r.ReplyCode)))
	default:
	}
	conn.release(ch)
	return delivery.Result{Outcome: intake.DeliveryHandled, Latency: time.Since(start)}
}

// amqpMessage is the persistent message for pub: its body, every header,
// the event id as message_id.
func amqpMessage(pub delivery.Publication, now time.Time) amqp.Publishing {
	headers := amqp.Table{}
	for k, vs := range pub.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	return amqp.Publishing{
		Headers:      headers,
		ContentType:  pub.Header.Get("Content-Type"),
		DeliveryMode: amqp.Persistent,
		MessageId:    pub.ID,
		Timestamp:    now,
		Body:         pub.Body,
	}
}

// connection returns the open connection, connecting when there is none
// or it broke.
func (p *amqpPublisher) connection(ctx context.Context) (*amqpConn, error) {
	p.mu.Lock()
	c, closed := p.conn, p.closed
	p.mu.Unlock()
	if closed {
		return nil, errAMQPClosed
	}
	if c != nil && c.usable() {
		return c, nil
	}
	select {
	case p.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.gate }()
	p.mu.Lock()
	c, closed = p.conn, p.closed
	p.mu.Unlock()
	if closed {
		return nil, errAMQPClosed
	}
	if c != nil && c.usable() {
		return c, nil
	}
	deadline, _ := ctx.Deadline()
	conn, err := amqp.DialConfig(p.url, amqp.Config{
		TLSClientConfig: p.tls,
		Dial: func(network, addr string) (net.Conn, error) {
			nc, err := p.dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Bounds the TLS and AMQP handshakes; the client clears it
			// once the connection is open.
			if err := nc.SetDeadline(deadline); err != nil {
				nc.Close()
				return nil, err
			}
			return nc, nil
		},
	})
	if err != nil {
		return nil, err
	}
	fresh := &amqpConn{c: conn, idle: make(chan *amqpChannel, amqpMaxIdle)}
	p.mu.Lock()
	if c != nil {
		p.old = append(p.old, c)
	}
	kept := p.old[:0]
	for _, o := range p.old {
		if !o.c.IsClosed() {
			kept = append(kept, o)
		}
	}
	p.old = kept
	p.conn = fresh
	p.mu.Unlock()
	return fresh, nil
}

// channel takes an idle channel or opens one in confirm mode.
func (c *amqpConn) channel() (*amqpChannel, error) {
idle:
	for {
		select {
		case ch := <-c.idle:
			if !ch.ch.IsClosed() {
				return ch, nil
			}
		default:
			break idle
		}
	}
	ch, err := c.c.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	return &amqpChannel{
		ch:      ch,
		returns: ch.NotifyReturn(make(chan amqp.Return, 1)),
		closes:  ch.NotifyClose(make(chan *amqp.Error, 1)),
	}, nil
}

// release keeps ch for the next publish, or closes it when enough are
// kept.
func (c *amqpConn) release(ch *amqpChannel) {
	if ch.ch.IsClosed() {
		return
	}
	select {
	case <-ch.returns:
	default:
	}
	select {
	case c.idle <- ch:
	default:
		_ = ch.ch.Close()
	}
}

// describe says why a connection or publish failed, in the words of an
// operator: a timeout as the time waited.
func (p *amqpPublisher) describe(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, errAMQPClosed):
		return err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("the broker did not answer within %s", p.timeout)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || pastDeadline(ctx):
		// The handshake's socket deadline is the context's, and the
		// client reports it as a frame error.
		return fmt.Sprintf("the broker did not answer within %s (%s)", p.timeout, p.failure(err))
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return p.failure(err)
}

// failure names what failed from a fixed set: the broker's reply code by
// its name (with the exchange a 404 is about), the client's own error, else
// the connection's failure. Never the broker's reply text.
func (p *amqpPublisher) failure(err error) string {
	var e *amqp.Error
	switch {
	case errors.As(err, &e) && e.Server:
		about := ""
		if e.Code == amqp.NotFound && p.target.exchange != "" {
			about = fmt.Sprintf(" (exchange %q)", p.target.exchange)
		}
		return "the broker answered " + amqpReply(e.Code) + about
	case errors.As(err, &e):
		return e.Error() // the client's own words
	}
	return delivery.BrokerFailure(err)
}

// amqpReply names an AMQP 0-9-1 reply code.
func amqpReply(code int) string {
	name, ok := amqpReplies[code]
	if !ok {
		name = "(an unknown reply code)"
	}
	return strconv.Itoa(code) + " " + name
}

var amqpReplies = map[int]string{
	311: "CONTENT_TOO_LARGE", 312: "NO_ROUTE", 313: "NO_CONSUMERS", 320: "CONNECTION_FORCED", 402: "INVALID_PATH",
	403: "ACCESS_REFUSED", 404: "NOT_FOUND", 405: "RESOURCE_LOCKED", 406: "PRECONDITION_FAILED", 501: "FRAME_ERROR",
	502: "SYNTAX_ERROR", 503: "COMMAND_INVALID", 504: "CHANNEL_ERROR", 505: "UNEXPECTED_FRAME", 506: "RESOURCE_ERROR",
	530: "NOT_ALLOWED", 540: "NOT_IMPLEMENTED", 541: "INTERNAL_ERROR",
}

func pastDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// Close closes the connection; a Publish after it fails.
func (p *amqpPublisher) Close() error {
	p.gate <- struct{}{}
	defer func() { <-p.gate }()
	p.mu.Lock()
	conns := append(p.old, p.conn)
	p.conn, p.old, p.closed = nil, nil, true
	p.mu.Unlock()
	var err error
	for _, c := range conns {
		if c != nil {
			err = errors.Join(err, c.close(p.timeout))
		}
	}
	return err
}
