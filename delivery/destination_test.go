package delivery

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
	"github.com/intakehq/intake/internal/testkit"
)

// memory is a broker kind for these tests: it keeps what is published to
// it, per url, and refuses a url without a topic.
type memory struct {
	mu     sync.Mutex
	opened map[string]int
	closed map[string]int
	got    []Publication
	fail   error
}

func (m *memory) kind() kind {
	return kind{
		check: func(u *url.URL) error {
			if strings.Trim(u.Path, "/") == "" {
				return intake.Errorf(intake.EINVALID, "url %s names no topic", redact.URL(u.String()))
			}
			return nil
		},
		open: func(u *url.URL, dial Dialer, timeout time.Duration) (Publisher, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.fail != nil {
				return nil, m.fail
			}
			m.opened[u.String()]++
			return &memoryPublisher{m: m, url: u.String()}, nil
		},
	}
}

type memoryPublisher struct {
	m   *memory
	url string
}

func (p *memoryPublisher) Publish(ctx context.Context, pub Publication) Result {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	p.m.got = append(p.m.got, pub)
	return Result{Outcome: intake.DeliveryHandled, Latency: time.Millisecond}
}

func (p *memoryPublisher) Close() error {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	p.m.closed[p.url]++
	return nil
}

func withMemoryBroker(t *testing.T) *memory {
	m := &memory{opened: map[string]int{}, closed: map[string]int{}}
	brokers["memory"] = m.kind()
	t.Cleanup(func() { delete(brokers, "memory") })
	return m
}

func TestABrokerURLIsCheckedByItsKindAndItsHostByThePolicy(t *testing.T) {
	withMemoryBroker(t)
	ctx := context.Background()
	for raw, want := range map[string]string{
		"memory://127.0.0.1:1/events":         "",
		"memory://user:pw@127.0.0.1:1/events": "", // a broker's credentials live in its url
		"memory://127.0.0.1:1/":               "names no topic",
		"memory://169.254.169.254:1/events":   "169.254.169.254",
		"gopher://127.0.0.1/x":                `url scheme "gopher" is not one intake delivers to: http, https, `, // and every kind built in
		"https://user:pw@127.0.0.1/x":         "url must not carry credentials",
		"/hooks":                              "url must be an absolute URL",
	} {
		err := DefaultPolicy().CheckURL(ctx, raw)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error with %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%s: the error shows the password: %v", raw, err)
		}
	}
}

// A delivery to a broker publishes the body signed as an HTTP delivery
// would be, over one connection per consumer, opened again when its url
// changes and closed when the consumer is forgotten.
func TestDeliverPublishesSignedToTheConsumersBrokerOverOneConnection(t *testing.T) {
	m := withMemoryBroker(t)
	s := NewSender(Options{Timeout: time.Second})
	defer s.Close()
	secret := NewSecret()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"stripe.invoice.paid"}`)
	for range 3 {
		r := s.Deliver(context.Background(), "cons_1", "memory://127.0.0.1:1/events", []string{secret},
			Publication{ID: "evt_1", Type: "stripe.invoice.paid", Body: body, OrderKey: "cus_9"}, now)
		if r.Outcome != intake.DeliveryHandled {
			t.Fatalf("deliver: %+v", r)
		}
	}
	if m.opened["memory://127.0.0.1:1/events"] != 1 || len(m.got) != 3 {
		t.Fatalf("opened %v, published %d; want one connection for three deliveries", m.opened, len(m.got))
	}
	p := m.got[0]
	want, _ := Sign(secret, "evt_1", now.Unix(), body)
	if string(p.Body) != string(body) || p.Header.Get("webhook-id") != "evt_1" || p.Header.Get("webhook-signature") != want ||
		p.Header.Get("webhook-timestamp") != "1700000000" || p.Header.Get("Content-Type") != "application/json" || p.OrderKey != "cus_9" {
		t.Fatalf("published %+v (%v), want the body signed as over HTTP", p, p.Header)
	}

	s.Deliver(context.Background(), "cons_1", "memory://127.0.0.1:1/other", []string{secret}, Publication{ID: "evt_2", Body: body}, now)
	testkit.WaitFor(t, "the old url's publisher is closed", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.closed["memory://127.0.0.1:1/events"] == 1
	})
	if m.opened["memory://127.0.0.1:1/other"] != 1 {
		t.Fatalf("opened %v, want the new url opened", m.opened)
	}
	s.Forget("cons_1")
	if m.closed["memory://127.0.0.1:1/other"] != 1 {
		t.Fatalf("closed %v, want the forgotten consumer's connection closed", m.closed)
	}
}

func TestABrokerThatCannotBeReachedIsARetryThatNamesNoPassword(t *testing.T) {
	m := withMemoryBroker(t)
	m.fail = errors.New("dial tcp: connection refused for user:s3cret")
	s := NewSender(Options{Timeout: time.Second})
	defer s.Close()
	r := s.Deliver(context.Background(), "cons_1", "memory://user:s3cret@127.0.0.1:1/events", []string{NewSecret()},
		Publication{ID: "evt_1", Body: []byte(`{}`)}, time.Now())
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "connection refused") || strings.Contains(r.Err, "s3cret") {
		t.Fatalf("result %+v, want a retry naming why and no password", r)
	}
	m.fail = nil
	if r := s.Deliver(context.Background(), "cons_1", "memory://user:s3cret@127.0.0.1:1/events", []string{NewSecret()},
		Publication{ID: "evt_1", Body: []byte(`{}`)}, time.Now()); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("once reachable: %+v", r)
	}
}

func TestExpandFillsTypeAndKey(t *testing.T) {
	p := Publication{Type: "github.push", OrderKey: "conn/obj"}
	if got := Expand("events.{type}.{key}", p); got != "events.github.push.conn/obj" {
		t.Errorf("Expand = %s", got)
	}
	if got := Expand("events.{key}", Publication{}); got != "events."+NoKey {
		t.Errorf("Expand without a key = %s", got)
	}
}

// testPublication is a call as the sender makes one: a body that is not
// all text, the Standard Webhooks headers, traceparent and a transform's
// headers, one of them with two values.
func testPublication(id, typ, key string) Publication {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,b2xkZXI=")
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Set("X-Tenant", "acme")
	h.Add("X-Transform", "one")
	h.Add("X-Transform", "two")
	return Publication{ID: id, Type: typ, OrderKey: key, Header: h, Body: []byte(`{"id":"` + id + `","n":1}` + "\n\x00\xff")}
}

// headerLines are a header's values as name=value lines, the names in
// lower case, sorted: what a broker message's headers should read.
func headerLines(h http.Header) []string {
	var out []string
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, strings.ToLower(k)+"="+v)
		}
	}
	slices.Sort(out)
	return out
}

// silentBroker accepts connections and never answers, as a hung broker
// does; it holds them until the test ends.
func silentBroker(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String()
}

// wantChecked: each bad url is refused as invalid with a message holding
// its reason, none showing password; each good one is accepted.
func wantChecked(t *testing.T, bad map[string]string, good []string, password string) {
	t.Helper()
	for raw, why := range bad {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		err = checkBroker(u)
		if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want it invalid saying %q", raw, err, why)
		}
		if err != nil && strings.Contains(err.Error(), password) {
			t.Errorf("%s: the error shows the password: %v", raw, err)
		}
	}
	for _, raw := range good {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if err := checkBroker(u); err != nil {
			t.Errorf("%s refused: %v", raw, err)
		}
	}
}

// openTestPublisher checks raw and opens a publisher to it through dial
// (nil: the default policy's), closed when the test ends.
func openTestPublisher(t *testing.T, raw string, dial Dialer, timeout time.Duration) Publisher {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkBroker(u); err != nil {
		t.Fatalf("check %s: %v", raw, err)
	}
	if dial == nil {
		dial = DefaultPolicy().Dialer(timeout)
	}
	p, err := brokers[strings.ToLower(u.Scheme)].open(u, dial, timeout)
	if err != nil {
		t.Fatalf("open %s: %v", raw, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
