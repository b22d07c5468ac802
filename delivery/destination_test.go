package delivery

import (
	"context"
	"errors"
	"net/url"
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

func (m *memory) kind() Kind {
	return Kind{
		Check: func(u *url.URL) error {
			if strings.Trim(u.Path, "/") == "" {
				return intake.Errorf(intake.EINVALID, "url %s names no topic", redact.URL(u.String()))
			}
			return nil
		},
		Open: func(u *url.URL, dial Dialer, timeout time.Duration) (Publisher, error) {
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

// memoryBroker is a memory broker and the Brokers that have it alone.
func memoryBroker() (*memory, Brokers) {
	m := &memory{opened: map[string]int{}, closed: map[string]int{}}
	return m, Brokers{"memory": m.kind()}
}

func TestABrokerURLIsCheckedByItsKindAndItsHostByThePolicy(t *testing.T) {
	_, brokers := memoryBroker()
	ctx := context.Background()
	for raw, want := range map[string]string{
		"memory://127.0.0.1:1/events":         "",
		"memory://user:pw@127.0.0.1:1/events": "", // a broker's credentials live in its url
		"memory://127.0.0.1:1/":               "names no topic",
		"memory://169.254.169.254:1/events":   "169.254.169.254",
		"gopher://127.0.0.1/x":                `url scheme "gopher" is not one intake delivers to: http, https, memory`,
		"https://user:pw@127.0.0.1/x":         "url must not carry credentials",
		"/hooks":                              "url must be an absolute URL",
	} {
		err := DefaultPolicy().CheckURL(ctx, raw, brokers)
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
	m, brokers := memoryBroker()
	s := NewSender(Options{Timeout: time.Second, Brokers: brokers})
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
	m, brokers := memoryBroker()
	m.fail = errors.New("dial tcp: connection refused for user:s3cret")
	s := NewSender(Options{Timeout: time.Second, Brokers: brokers})
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
