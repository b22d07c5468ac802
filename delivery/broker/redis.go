package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/redact"
)

// Redis Streams (DESIGN §12): redis://[user:pass@]host:6379/<db>?stream=<key>&maxlen=<n>,
// or rediss:// over TLS. Each event is one XADD to the stream: a field
// "body" holding the body byte for byte, and one field per header, named
// in lower case (webhook-id, webhook-timestamp, webhook-signature,
// traceparent, content-type, a transform's). A call is handled once XADD
// returned the entry's id.
//
// Redis streams keep every entry added: a republish after a lost answer
// adds a second entry with the same webhook-id field, which is the
// consumer's deduplication id.

var redisKind = delivery.Kind{Check: checkRedis, Open: openRedis}

func init() {
	// The library would log each failed dial on its own; the delivery's
	// outcome already records why, in intake's log and attempts.
	redis.SetLogger(&logging.VoidLogger{})
}

// redisPoolSize bounds the connections one consumer keeps to its Redis;
// XADD is quick, so a few serve its in-flight limit.
const redisPoolSize = 4

// redisTarget is what a redis url names.
type redisTarget struct {
	addr     string
	tls      bool
	host     string
	user     string
	password string
	db       int
	stream   string // may hold {type}
	maxLen   int64  // 0: no trimming
}

// parseRedis reads u, refusing what cannot work, with a message that
// names it.
func parseRedis(u *url.URL) (redisTarget, error) {
	shown := redact.URL(u.String())
	bad := func(format string, args ...any) (redisTarget, error) {
		return redisTarget{}, intake.Errorf(intake.EINVALID, "url %s: "+format, append([]any{shown}, args...)...)
	}
	t := redisTarget{tls: strings.EqualFold(u.Scheme, "rediss"), host: u.Hostname()}
	if u.Opaque != "" || t.host == "" {
		return bad("has no host (redis://host:6379/0?stream=intake)")
	}
	port := u.Port()
	if port == "" {
		port = "6379"
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return bad("port %q is not a port number", port)
	}
	t.addr = net.JoinHostPort(t.host, port)
	if u.User != nil {
		t.user = u.User.Username()
		t.password, _ = u.User.Password()
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 || n > 15 || db != strconv.Itoa(n) {
			return bad("the database %q must be a number from 0 to 15 (redis://host:6379/0)", db)
		}
		t.db = n
	}
	if u.Fragment != "" {
		return bad("has a fragment (#%s), which means nothing to Redis", u.Fragment)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("the query cannot be read: %v", err)
	}
	for name, values := range q {
		switch name {
		case "stream", "maxlen":
			if len(values) > 1 {
				return bad("%s is given %d times", name, len(values))
			}
		default:
			return bad("unknown parameter %q (a redis url takes stream and maxlen)", name)
		}
	}
	t.stream = q.Get("stream")
	if strings.TrimSpace(t.stream) == "" {
		return bad("names no stream: add ?stream=<key> (it may hold {type})")
	}
	if v := q.Get("maxlen"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return bad("maxlen %q must be a whole number above 0 (the stream is trimmed to about that many entries)", v)
		}
		t.maxLen = n
	} else if q.Has("maxlen") {
		return bad("maxlen is empty: give a number, or leave it out to keep every entry")
	}
	return t, nil
}

func checkRedis(u *url.URL) error {
	_, err := parseRedis(u)
	return err
}

// redisPublisher appends to one consumer's stream over a small pool of
// connections, each made through the address policy's dialer.
type redisPublisher struct {
	client  *redis.Client
	end     context.CancelFunc // ends dials under way
	target  redisTarget
	shown   string // the url, password redacted
	timeout time.Duration
}

func openRedis(u *url.URL, dial delivery.Dialer, timeout time.Duration) (delivery.Publisher, error) {
	t, err := parseRedis(u)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// Close ends a dial still under way: the library probes a Redis that
	// is down from a goroutine of its own.
	life, end := context.WithCancel(context.Background())
	connect := func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(life, cancel)()
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if !t.tls {
			if raw, ok := redisRaw(c); ok {
				return redisSocket{Conn: c, raw: raw}, nil
			}
			return c, nil
		}
		tc := tls.Client(c, &tls.Config{ServerName: t.host, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
	client := redis.NewClient(&redis.Options{
		Addr:     t.addr,
		Dialer:   connect,
		Username: t.user,
		Password: t.password,
		DB:       t.db,
		// RESP2: every Redis with streams (5.0 on) speaks it, and a
		// publisher needs no pushed notifications.
		Protocol:                 2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		DisableIdentity:          true,
		// One XADD per Publish: intake's retry schedule retries, with the
		// same webhook-id.
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              redisPoolSize,
		PoolTimeout:           timeout,
		ConnMaxIdleTime:       5 * time.Minute,
	})
	return &redisPublisher{client: client, end: end, target: t, shown: redact.URL(u.String()), timeout: timeout}, nil
}

// redisSocket shows the library the socket under the policy's counting
// wrapper: before it reuses a kept connection it peeks at the socket, so
// one that Redis closed (a restart, its idle timeout) is dialled afresh
// rather than failing a publish.
type redisSocket struct {
	net.Conn
	raw syscall.Conn
}

func (s redisSocket) SyscallConn() (syscall.RawConn, error) { return s.raw.SyscallConn() }

// redisRaw finds the socket of a connection the policy's dialer made.
func redisRaw(c net.Conn) (syscall.Conn, bool) {
	for {
		switch v := c.(type) {
		case syscall.Conn:
			return v, true
		case interface{ NetConn() net.Conn }: // the policy's byte count
			c = v.NetConn()
		default:
			return nil, false
		}
	}
}

// Publish adds one entry to the stream: handled once XADD answered its id.
func (r *redisPublisher) Publish(ctx context.Context, p delivery.Publication) delivery.Result {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	args := &redis.XAddArgs{Stream: delivery.Expand(r.target.stream, p), Values: redisFields(p)}
	if r.target.maxLen > 0 {
		args.MaxLen, args.Approx = r.target.maxLen, true
	}
	start := time.Now()
	err := r.client.XAdd(ctx, args).Err()
	latency := time.Since(start)
	if err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Latency: latency, Err: r.describe(err)}
	}
	return delivery.Result{Outcome: intake.DeliveryHandled, Latency: latency}
}

// redisFields are the entry's fields: body first, then each header by its
// lower-case name (several values joined as HTTP joins them), webhook-id
// always the event id. A header named "body" is left out: the field is
// the body's.
func redisFields(p delivery.Publication) []any {
	fields := make(map[string]string, len(p.Header)+1)
	for name, values := range p.Header {
		name = strings.ToLower(name)
		if name == "body" || len(values) == 0 {
			continue
		}
		if prev, ok := fields[name]; ok {
			values = append([]string{prev}, values...)
		}
		fields[name] = strings.Join(values, ", ")
	}
	if p.ID != "" {
		fields["webhook-id"] = p.ID
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]any, 0, 2+2*len(names))
	out = append(out, "body", p.Body)
	for _, name := range names {
		out = append(out, name, fields[name])
	}
	return out
}

// describe says why a publish failed, naming the Redis (never its
// password) and, when Redis answered an error, its code from a fixed set:
// never the text of the answer, which a service that is not Redis writes.
func (r *redisPublisher) describe(err error) string {
	var (
		ne    net.Error
		reply redis.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "redis " + r.shown + " did not answer within " + r.timeout.String()
	case errors.Is(err, context.Canceled):
		return "redis " + r.shown + ": publish canceled"
	case errors.Is(err, redis.ErrPoolTimeout):
		return "redis " + r.shown + ": every connection stayed busy for " + r.timeout.String()
	case errors.As(err, &reply) && !errors.Is(err, redis.Nil):
		code, _, _ := strings.Cut(reply.Error(), " ")
		if slices.Contains(redisCodes, code) {
			return "redis " + r.shown + ": answered " + code
		}
		return "redis " + r.shown + ": answered an error"
	}
	return "redis " + r.shown + ": " + delivery.BrokerFailure(err)
}

// redisCodes are the error codes Redis answers with that a publish can
// meet, named in a failure as they are.
var redisCodes = []string{
	"ERR", "WRONGPASS", "NOAUTH", "NOPERM", "WRONGTYPE", "OOM", "READONLY", "LOADING", "BUSY",
	"MASTERDOWN", "MISCONF", "NOREPLICAS", "CLUSTERDOWN", "MOVED", "ASK", "TRYAGAIN", "CROSSSLOT",
}

// Close closes the pool's connections and ends any dial under way. After
// four dials in a row failed, the library probes the address once a
// second from a goroutine that sees the Close at its next probe.
func (r *redisPublisher) Close() error {
	r.end()
	return r.client.Close()
}
