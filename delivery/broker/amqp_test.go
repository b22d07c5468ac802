package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/redact"
)

// amqpBrokerURL is the RabbitMQ the tests publish to: INTAKE_TEST_AMQP, or
// the one on this machine and CI's.
func amqpBrokerURL() string {
	if u := os.Getenv("INTAKE_TEST_AMQP"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// amqpTestBroker is a connection of the test's own to RabbitMQ, to declare
// and consume with. Without a broker the test fails in CI and is skipped
// elsewhere.
func amqpTestBroker(t *testing.T) *amqp.Connection {
	t.Helper()
	c, err := amqp.DialConfig(amqpBrokerURL(), amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("RabbitMQ is not reachable at %s (%v): CI must run it", redact.URL(amqpBrokerURL()), err)
		}
		t.Skipf("RabbitMQ is not reachable at %s: %v", redact.URL(amqpBrokerURL()), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func amqpName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// amqpBound declares a topic exchange and a queue bound to it by pattern,
// both deleted by the test's end, and consumes the queue.
func amqpBound(t *testing.T, c *amqp.Connection, pattern string) (exchange string, deliveries <-chan amqp.Delivery) {
	t.Helper()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	exchange, queue := amqpName("intake-test-x"), amqpName("intake-test-q")
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(queue, pattern, exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	d, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ch.QueueDelete(queue, false, false, false)
		_ = ch.ExchangeDelete(exchange, false, false)
		_ = ch.Close()
	})
	return exchange, d
}

// amqpQueue declares a queue (deleted by the test's end) and consumes it.
func amqpQueue(t *testing.T, c *amqp.Connection) (string, <-chan amqp.Delivery) {
	t.Helper()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	queue := amqpName("intake-test-q")
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	d, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ch.QueueDelete(queue, false, false, false)
		_ = ch.Close()
	})
	return queue, d
}

// amqpURL is the broker's url with query.
func amqpURL(t *testing.T, query string) string {
	t.Helper()
	u, err := url.Parse(amqpBrokerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = query
	return u.String()
}

// openTestAMQP opens a publisher to raw through the policy's dialer.
func openTestAMQP(t *testing.T, raw string, dial delivery.Dialer, timeout time.Duration) delivery.Publisher {
	t.Helper()
	return openTestPublisher(t, raw, dial, timeout)
}

func receive(t *testing.T, d <-chan amqp.Delivery) amqp.Delivery {
	t.Helper()
	select {
	case m := <-d:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived on the queue")
		return amqp.Delivery{}
	}
}

func TestAMQPPublishesBodyEveryHeaderAndMessageIDOnceConfirmed(t *testing.T) {
	c := amqpTestBroker(t)
	exchange, d := amqpBound(t, c, "events.#")
	p := openTestAMQP(t, amqpURL(t, "exchange="+exchange+"&routing_key=events.{type}.{key}"), nil, 5*time.Second)

	pub := testPublication("evt_1", "invoice.paid", "cust-7")
	r := p.Publish(context.Background(), pub)
	if r.Outcome != intake.DeliveryHandled || r.Err != "" {
		t.Fatalf("result %+v", r)
	}
	m := receive(t, d)
	if string(m.Body) != string(pub.Body) {
		t.Fatalf("body %q, want %q", m.Body, pub.Body)
	}
	if m.MessageId != "evt_1" || m.ContentType != "application/json" || m.DeliveryMode != amqp.Persistent || m.Timestamp.IsZero() {
		t.Fatalf("properties: message_id %q content_type %q delivery_mode %d timestamp %v", m.MessageId, m.ContentType, m.DeliveryMode, m.Timestamp)
	}
	if m.RoutingKey != "events.invoice.paid.cust-7" {
		t.Fatalf("routing key %q", m.RoutingKey)
	}
	for k := range pub.Header {
		name := strings.ToLower(k)
		if got, want := m.Headers[name], strings.Join(pub.Header.Values(k), ", "); got != want {
			t.Errorf("header %s = %v, want %q", name, got, want)
		}
	}
	if len(m.Headers) != len(pub.Header) {
		t.Errorf("headers %v, want exactly %v", m.Headers, pub.Header)
	}
}

func TestAMQPRoutingKeyDefaultsToTheEventTypeAndKeyToUnderscore(t *testing.T) {
	c := amqpTestBroker(t)
	exchange, d := amqpBound(t, c, "#")
	p := openTestAMQP(t, amqpURL(t, "exchange="+exchange), nil, 5*time.Second)
	if r := p.Publish(context.Background(), testPublication("evt_1", "order.created", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("result %+v", r)
	}
	if m := receive(t, d); m.RoutingKey != "order.created" {
		t.Fatalf("routing key %q, want the event type", m.RoutingKey)
	}

	q := openTestAMQP(t, amqpURL(t, "exchange="+exchange+"&routing_key=by-key.{key}"), nil, 5*time.Second)
	if r := q.Publish(context.Background(), testPublication("evt_2", "order.created", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("result %+v", r)
	}
	if m := receive(t, d); m.RoutingKey != "by-key."+delivery.NoKey {
		t.Fatalf("routing key %q, want by-key.%s", m.RoutingKey, delivery.NoKey)
	}
}

func TestAMQPQueueURLPublishesThroughTheDefaultExchange(t *testing.T) {
	c := amqpTestBroker(t)
	queue, d := amqpQueue(t, c)
	p := openTestAMQP(t, amqpURL(t, "queue="+queue), nil, 5*time.Second)
	if r := p.Publish(context.Background(), testPublication("evt_q", "a.b", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("result %+v", r)
	}
	m := receive(t, d)
	if m.Exchange != "" || m.RoutingKey != queue || m.MessageId != "evt_q" {
		t.Fatalf("exchange %q routing key %q message_id %q", m.Exchange, m.RoutingKey, m.MessageId)
	}
}

func TestAMQPRepublishCarriesTheSameMessageID(t *testing.T) {
	c := amqpTestBroker(t)
	queue, d := amqpQueue(t, c)
	p := openTestAMQP(t, amqpURL(t, "queue="+queue), nil, 5*time.Second)
	pub := testPublication("evt_again", "a.b", "")
	for i := 0; i < 2; i++ {
		if r := p.Publish(context.Background(), pub); r.Outcome != intake.DeliveryHandled {
			t.Fatalf("publish %d: %+v", i, r)
		}
	}
	// RabbitMQ does not deduplicate: the consumer does, by message_id,
	// which is the same on both.
	for i := 0; i < 2; i++ {
		if m := receive(t, d); m.MessageId != "evt_again" || m.Headers["webhook-id"] != "evt_again" {
			t.Fatalf("delivery %d: message_id %q webhook-id %v", i, m.MessageId, m.Headers["webhook-id"])
		}
	}
}

func TestAMQPUnroutableMessageIsRetried(t *testing.T) {
	c := amqpTestBroker(t)
	exchange, d := amqpBound(t, c, "bound.#")
	p := openTestAMQP(t, amqpURL(t, "exchange="+exchange+"&routing_key=elsewhere.{type}"), nil, 5*time.Second)
	r := p.Publish(context.Background(), testPublication("evt_lost", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, `unroutable: no queue is bound for routing key "elsewhere.x"`) {
		t.Fatalf("result %+v", r)
	}
	select {
	case m := <-d:
		t.Fatalf("unroutable message arrived: %q", m.RoutingKey)
	default:
	}

	queue := openTestAMQP(t, amqpURL(t, "queue="+amqpName("intake-test-absent")), nil, 5*time.Second)
	if r := queue.Publish(context.Background(), testPublication("evt_lost", "x", "")); r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "unroutable") {
		t.Fatalf("publish to a queue that does not exist: %+v", r)
	}
}

func TestAMQPMissingExchangeIsRetriedAndPublishingResumesOnceDeclared(t *testing.T) {
	c := amqpTestBroker(t)
	exchange := amqpName("intake-test-x")
	p := openTestAMQP(t, amqpURL(t, "exchange="+exchange+"&routing_key=k"), nil, 5*time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "NOT_FOUND") || !strings.Contains(r.Err, exchange) {
		t.Fatalf("result %+v", r)
	}

	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeDirect, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer ch.ExchangeDelete(exchange, false, false)
	q, err := ch.QueueDeclare(amqpName("intake-test-q"), false, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.QueueDelete(q.Name, false, false, false)
	if err := ch.QueueBind(q.Name, "k", exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	if r := p.Publish(context.Background(), testPublication("evt_1", "x", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("after the exchange was declared: %+v", r)
	}
}

// Many publishes at once over one publisher: each answer is its own
// message's (a routable one handled, an unroutable one retried), and
// every routable message arrives once.
func TestAMQPConcurrentPublishesEachGetTheirOwnConfirmAndReturn(t *testing.T) {
	c := amqpTestBroker(t)
	exchange, d := amqpBound(t, c, "ok.#")
	p := openTestAMQP(t, amqpURL(t, "exchange="+exchange), nil, 10*time.Second)

	const n = 200
	results := make([]delivery.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			typ := "ok.t"
			if i%3 == 0 {
				typ = "lost.t"
			}
			results[i] = p.Publish(context.Background(), testPublication(fmt.Sprintf("evt_%d", i), typ, ""))
		}()
	}
	wg.Wait()
	want := map[string]bool{}
	for i, r := range results {
		if i%3 == 0 {
			if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "unroutable") {
				t.Fatalf("unroutable evt_%d: %+v", i, r)
			}
			continue
		}
		if r.Outcome != intake.DeliveryHandled {
			t.Fatalf("routable evt_%d: %+v", i, r)
		}
		want[fmt.Sprintf("evt_%d", i)] = true
	}
	for len(want) > 0 {
		m := receive(t, d)
		if !want[m.MessageId] {
			t.Fatalf("unexpected or repeated message %q", m.MessageId)
		}
		if m.Headers["webhook-id"] != m.MessageId || string(m.Body) != `{"id":"`+m.MessageId+`","n":1}`+"\n\x00\xff" {
			t.Fatalf("message %q carries another's header %v or body %q", m.MessageId, m.Headers["webhook-id"], m.Body)
		}
		delete(want, m.MessageId)
	}
}

func TestAMQPNothingListeningIsRetriedWithoutThePassword(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := openTestAMQP(t, "amqp://intake:s3cret-pw@"+addr+"/?queue=q", nil, 2*time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "connection refused") {
		t.Fatalf("result %+v", r)
	}
	if strings.Contains(r.Err, "s3cret-pw") || !strings.Contains(r.Err, "***:***@") {
		t.Fatalf("error %q shows the password or not the url", r.Err)
	}
}

func TestAMQPBrokerThatNeverAnswersIsRetriedWithinTheTimeout(t *testing.T) {
	p := openTestAMQP(t, "amqp://"+silentBroker(t)+"/?queue=q", nil, 300*time.Millisecond)
	start := time.Now()
	r := p.Publish(context.Background(), testPublication("evt_1", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "did not answer within 300ms") {
		t.Fatalf("result %+v", r)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("publish took %s with a 300ms timeout", took)
	}
}

func TestAMQPDialsThroughTheAddressPolicy(t *testing.T) {
	deny := delivery.Policy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	p := openTestAMQP(t, amqpURL(t, "queue=q"), deny.Dialer(2*time.Second), 2*time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "refused by the consumer address policy") {
		t.Fatalf("result %+v", r)
	}
}

func TestAMQPSUsesTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	p := openTestAMQP(t, "amqps://"+host+"/?queue=q", nil, 2*time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "certificate") {
		t.Fatalf("result %+v", r)
	}
}

// A connection that broke is made again by the next publish.
func TestAMQPRemakesABrokenConnectionOnTheNextPublish(t *testing.T) {
	c := amqpTestBroker(t)
	queue, d := amqpQueue(t, c)
	var mu sync.Mutex
	var conns []net.Conn
	policy := delivery.Policy{}.Dialer(5 * time.Second)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := policy(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
		}
		return nc, err
	}
	p := openTestAMQP(t, amqpURL(t, "queue="+queue), dial, 5*time.Second)
	if r := p.Publish(context.Background(), testPublication("evt_1", "x", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("first publish: %+v", r)
	}
	receive(t, d)

	closed := p.(*amqpPublisher).conn.c.NotifyClose(make(chan *amqp.Error, 1))
	conns[0].Close()
	<-closed

	if r := p.Publish(context.Background(), testPublication("evt_2", "x", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish after the connection broke: %+v", r)
	}
	if m := receive(t, d); m.MessageId != "evt_2" {
		t.Fatalf("message %q", m.MessageId)
	}
	if len(conns) != 2 {
		t.Fatalf("%d connections made, want 2", len(conns))
	}
}

func TestAMQPCloseReleasesEverything(t *testing.T) {
	c := amqpTestBroker(t)
	queue, d := amqpQueue(t, c)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	u, _ := url.Parse(amqpURL(t, "queue="+queue))
	p, err := openAMQP(u, delivery.Policy{}.Dialer(5*time.Second), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := p.Publish(context.Background(), testPublication(fmt.Sprintf("evt_%d", i), "x", "")); r.Outcome != intake.DeliveryHandled {
				t.Errorf("publish %d: %+v", i, r)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 20; i++ {
		receive(t, d)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if r := p.Publish(context.Background(), testPublication("evt_late", "x", "")); r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "closed") {
		t.Fatalf("publish after close: %+v", r)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestAMQPCheckRefusesURLsThatCannotWork(t *testing.T) {
	bad := map[string]string{
		"amqp://127.0.0.1:5672/":                                               "no exchange nor queue",
		"amqp://127.0.0.1:5672/?routing_key=k":                                 "no exchange nor queue",
		"amqp://127.0.0.1:5672/?exchange=&queue=":                              "no exchange nor queue",
		"amqp://127.0.0.1:5672/?exchange=x&queue=q":                            "both an exchange and a queue",
		"amqp://127.0.0.1:5672/?queue=q&routing_key=k":                         "routing_key goes with exchange",
		"amqp://127.0.0.1:5672/?exchange=has space":                            "not an exchange name",
		"amqp://127.0.0.1:5672/?exchange=x&exchange=y":                         `"exchange" is given 2 times`,
		"amqp://127.0.0.1:5672/?exchange=x&routingkey=k":                       `unknown parameter "routingkey"`,
		"amqp://127.0.0.1:5672/?exchange=x&certfile=/etc/shadow":               "names a file",
		"amqp://127.0.0.1:5672/?exchange=x&heartbeat=often":                    "heartbeat",
		"amqp://127.0.0.1:99999/?exchange=x":                                   "not a port number",
		"amqp://127.0.0.1/?exchange=x&routing_key=" + strings.Repeat("k", 256): "longer than 255",
		"amqp://127.0.0.1/?queue=" + strings.Repeat("q", 256):                  "longer than 255",
		"amqps://user:hunter2@127.0.0.1/":                                      "no exchange nor queue",
		"amqp:///?exchange=x":                                                  "no host",
	}
	good := []string{
		"amqp://127.0.0.1:5672/?exchange=intake&routing_key=events",
		"amqp://guest:guest@127.0.0.1:5672/?exchange=intake&routing_key=events.{type}.{key}",
		"amqp://127.0.0.1/?exchange=amq.topic",
		"amqp://127.0.0.1:5672/prod?queue=billing%20events",
		"amqps://user:pw@rabbit.internal/vhost?exchange=intake&heartbeat=30&server_name_indication=rabbit",
	}
	wantChecked(t, bad, good, "hunter2")
	for _, s := range []string{"amqp", "amqps"} {
		if !All().Names(s + "://h/?queue=q") {
			t.Errorf("%s is not a broker scheme", s)
		}
	}
}

// amqpProxy stands between a publisher and RabbitMQ: it can stop passing
// on what the broker says (a broker that takes messages and never
// confirms) and counts the connections made through it.
type amqpProxy struct {
	l      net.Listener
	broker string
	mute   atomic.Bool
	conns  atomic.Int32
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   []net.Conn
}

func startAMQPProxy(t *testing.T) *amqpProxy {
	t.Helper()
	u, err := url.Parse(amqpBrokerURL())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	x := &amqpProxy{l: l, broker: u.Host}
	x.wg.Add(1)
	go x.serve()
	t.Cleanup(x.close)
	return x
}

func (x *amqpProxy) serve() {
	defer x.wg.Done()
	for {
		client, err := x.l.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", x.broker)
		if err != nil {
			client.Close()
			continue
		}
		x.conns.Add(1)
		x.mu.Lock()
		x.open = append(x.open, client, server)
		x.mu.Unlock()
		x.wg.Add(2)
		go func() {
			defer x.wg.Done()
			_, _ = io.Copy(server, client)
			server.Close()
		}()
		go func() {
			defer x.wg.Done()
			defer client.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && !x.mute.Load() {
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (x *amqpProxy) close() {
	x.l.Close()
	x.mu.Lock()
	for _, c := range x.open {
		c.Close()
	}
	x.mu.Unlock()
	x.wg.Wait()
}

// A broker that takes the message and never confirms it: the publish is
// retried once the timeout passes, and the next publish connects again.
func TestAMQPUnconfirmedPublishIsRetriedAtTheTimeoutAndTheConnectionRemade(t *testing.T) {
	c := amqpTestBroker(t)
	queue, d := amqpQueue(t, c)
	x := startAMQPProxy(t)
	p := openTestAMQP(t, "amqp://guest:guest@"+x.l.Addr().String()+"/?queue="+queue, nil, 500*time.Millisecond)
	if r := p.Publish(context.Background(), testPublication("evt_1", "x", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("first publish: %+v", r)
	}
	receive(t, d)

	x.mute.Store(true)
	start := time.Now()
	r := p.Publish(context.Background(), testPublication("evt_2", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "no publisher confirm within 500ms") {
		t.Fatalf("unconfirmed publish: %+v", r)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("unconfirmed publish took %s with a 500ms timeout", took)
	}
	if m := receive(t, d); m.MessageId != "evt_2" {
		t.Fatalf("message %q", m.MessageId)
	}

	x.mute.Store(false)
	if r := p.Publish(context.Background(), testPublication("evt_2", "x", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("republish once the broker answers: %+v", r)
	}
	if m := receive(t, d); m.MessageId != "evt_2" {
		t.Fatalf("message %q", m.MessageId)
	}
	if n := x.conns.Load(); n != 2 {
		t.Fatalf("%d connections made, want 2", n)
	}
}

func TestAMQPRefusedCredentialsAreRetriedWithoutThePassword(t *testing.T) {
	amqpTestBroker(t)
	u, err := url.Parse(amqpBrokerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("intake-nobody", "wrong-pw-7")
	u.RawQuery = "queue=q"
	p := openTestAMQP(t, u.String(), nil, 5*time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "x", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "403") || strings.Contains(r.Err, "wrong-pw-7") {
		t.Fatalf("result %+v", r)
	}
}

// Whatever url check accepts opens a publisher, and check never panics.
func FuzzCheckAMQP(f *testing.F) {
	for _, s := range []string{
		"amqp://127.0.0.1:5672/?exchange=intake&routing_key=events.{type}",
		"amqps://u:p@h/v?queue=q&heartbeat=5",
		"amqp://h/?exchange=x&queue=q",
		"amqp://h:0/?exchange=%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") {
			return
		}
		if All().Check(u) != nil {
			return
		}
		p, err := openAMQP(u, delivery.Policy{}.Dialer(time.Second), time.Second)
		if err != nil {
			t.Fatalf("%q passed check but does not open: %v", raw, err)
		}
		_ = p.Close()
	})
}

// The sender's Deliver publishes to an amqp consumer signed as over HTTP,
// over the connection it keeps for the consumer.
func TestDeliverPublishesToRabbitMQSignedAsOverHTTP(t *testing.T) {
	c := amqpTestBroker(t)
	queue, d := amqpQueue(t, c)
	s := delivery.NewSender(delivery.Options{Timeout: 5 * time.Second, Brokers: All()})
	defer s.Close()
	secret := delivery.NewSecret()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"evt_s","type":"stripe.invoice.paid"}`)
	for i := 0; i < 2; i++ {
		r := s.Deliver(context.Background(), "cons_amqp", amqpURL(t, "queue="+queue), []string{secret},
			delivery.Publication{ID: "evt_s", Type: "stripe.invoice.paid", Body: body}, now)
		if r.Outcome != intake.DeliveryHandled {
			t.Fatalf("deliver %d: %+v", i, r)
		}
	}
	want, _ := delivery.Sign(secret, "evt_s", now.Unix(), body)
	for i := 0; i < 2; i++ {
		m := receive(t, d)
		if string(m.Body) != string(body) || m.MessageId != "evt_s" || m.ContentType != "application/json" ||
			m.Headers["webhook-id"] != "evt_s" || m.Headers["webhook-timestamp"] != "1700000000" || m.Headers["webhook-signature"] != want {
			t.Fatalf("delivery %d: body %q message_id %q headers %v", i, m.Body, m.MessageId, m.Headers)
		}
	}
}
