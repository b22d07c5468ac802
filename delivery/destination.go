package delivery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
)

// A consumer's url names where its events go, by scheme (DESIGN §12):
// http and https are posted to; nats, kafka, amqp and redis are brokers,
// published to. Everything else about a consumer is the same for every
// kind.

// Publication is one call to a destination: byte for byte the body an
// HTTP consumer would get, with the headers it would get (the Standard
// Webhooks values, traceparent, Content-Type and a transform's headers)
// as the message's headers or properties.
type Publication struct {
	// ID is the event id: the destination's deduplication id (Nats-Msg-Id,
	// message_id, the webhook-id header or field), the same on every
	// attempt.
	ID string
	// Type is the event type, for "{type}" in a subject, topic or routing
	// key.
	Type   string
	Body   []byte
	Header http.Header
	// OrderKey is the route's ordering key ("" for none): the record key
	// of a Kafka record, the "{key}" of a NATS subject or AMQP routing key.
	OrderKey string
}

// Publisher publishes to one destination, one consumer's url, over the
// connection it keeps. Publish is safe for concurrent use; it returns
// handled once the destination acknowledged the message (a PubAck, a
// publisher confirm, a produce acked by every in-sync replica, the id of
// an XADD), else retry with why. Close releases the connection.
type Publisher interface {
	Publish(ctx context.Context, p Publication) Result
	Close() error
}

// Dialer makes a connection to a broker's address through the address
// policy, as the HTTP sender's connections are made.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Kind is a scheme of destination other than HTTP: how its urls are
// checked when saved and how a publisher to one is opened.
type Kind struct {
	// Check refuses a url of the kind that cannot work, saying why (an
	// EINVALID error): a missing topic, a subject with spaces, no
	// exchange nor queue.
	Check func(u *url.URL) error
	// Open connects a publisher to u; each dial goes through dial, and
	// each publish is bounded by timeout.
	Open func(u *url.URL, dial Dialer, timeout time.Duration) (Publisher, error)
}

// Brokers are the destination kinds other than HTTP a consumer's url may
// name, by scheme. Package delivery/broker has intake's (NATS, Kafka, AMQP,
// Redis), so that what links this package alone (the control plane and its
// transports) links no broker's client; nil: HTTP only.
type Brokers map[string]Kind

// Schemes lists the schemes a consumer's url may have.
func (b Brokers) Schemes() []string {
	out := slices.Sorted(maps.Keys(b))
	return append([]string{"http", "https"}, out...)
}

// Names reports whether raw names a broker rather than an HTTP receiver.
func (b Brokers) Names(raw string) bool {
	scheme, _, _ := strings.Cut(raw, "://")
	_, ok := b[strings.ToLower(scheme)]
	return ok
}

// Check checks a broker url of a known scheme (nil for any other): a
// host, and its kind's own rules.
func (b Brokers) Check(u *url.URL) error {
	k, ok := b[strings.ToLower(u.Scheme)]
	if !ok {
		return nil
	}
	if u.Hostname() == "" {
		return intake.Errorf(intake.EINVALID, "url %s has no host", redact.URL(u.String()))
	}
	return k.Check(u)
}

// NoKey stands for "{key}" in a subject or routing key when the event has
// no ordering key.
const NoKey = "_"

// Expand fills a subject, topic or routing key written with "{type}" (the
// event type) and "{key}" (the ordering key, NoKey when there is none).
func Expand(template string, p Publication) string {
	if !strings.Contains(template, "{") {
		return template
	}
	key := p.OrderKey
	if key == "" {
		key = NoKey
	}
	return strings.NewReplacer("{type}", p.Type, "{key}", key).Replace(template)
}

// open connects a publisher to the broker raw names.
func (b Brokers) open(raw string, dial Dialer, timeout time.Duration) (Publisher, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("bad consumer url")
	}
	k, ok := b[strings.ToLower(u.Scheme)]
	if !ok {
		return nil, fmt.Errorf("url scheme %q is not one intake delivers to", u.Scheme)
	}
	p, err := k.Open(u, dial, timeout)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %s", redact.URL(raw), redact.Password(err.Error(), u))
	}
	return p, nil
}

// publishers keeps one publisher per consumer, for the url it was opened
// for: a changed url closes the old one and opens another.
type publishers struct {
	mu sync.Mutex
	m  map[string]*pooled
}

// pooled is one consumer's publisher, opened once by whichever delivery
// needs it first.
type pooled struct {
	url  string
	once sync.Once
	p    Publisher
	err  error
}

func (ps *publishers) get(consumerID, url string, open func() (Publisher, error)) (Publisher, error) {
	ps.mu.Lock()
	e := ps.m[consumerID]
	if e == nil || e.url != url {
		if e != nil {
			go e.close()
		}
		e = &pooled{url: url}
		ps.m[consumerID] = e
	}
	ps.mu.Unlock()
	e.once.Do(func() { e.p, e.err = open() })
	if e.err != nil {
		// Not kept: the next delivery tries to connect again.
		ps.mu.Lock()
		if ps.m[consumerID] == e {
			delete(ps.m, consumerID)
		}
		ps.mu.Unlock()
		return nil, e.err
	}
	return e.p, nil
}

func (ps *publishers) forget(consumerID string) {
	ps.mu.Lock()
	e := ps.m[consumerID]
	delete(ps.m, consumerID)
	ps.mu.Unlock()
	if e != nil {
		e.close()
	}
}

func (ps *publishers) closeAll() error {
	ps.mu.Lock()
	all := ps.m
	ps.m = map[string]*pooled{}
	ps.mu.Unlock()
	var errs []error
	for _, e := range all {
		errs = append(errs, e.close())
	}
	return errors.Join(errs...)
}

// close closes the publisher once it is open (waiting for an open under
// way); one that never opened has nothing to close.
func (e *pooled) close() error {
	e.once.Do(func() { e.err = errors.New("closed") })
	if e.p == nil {
		return nil
	}
	return e.p.Close()
}
