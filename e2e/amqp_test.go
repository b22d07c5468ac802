package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/intakehq/intake/delivery"
)

// amqpBroker is a connection of the test's own to the RabbitMQ the tests
// use, to declare queues and exchanges and read what intake published.
type amqpBroker struct {
	url  *url.URL // amqp://user:pass@host:port/vhost
	conn *amqp.Connection
}

// newAMQPBroker connects to INTAKE_TEST_AMQP, or to the RabbitMQ on this
// machine and CI's. Without one the test fails in CI and is skipped
// elsewhere.
func newAMQPBroker(t *testing.T) amqpBroker {
	t.Helper()
	raw := os.Getenv("INTAKE_TEST_AMQP")
	if raw == "" {
		raw = "amqp://guest:guest@127.0.0.1:5672/"
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := amqp.DialConfig(raw, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("RabbitMQ is not reachable at %s (%v): CI must run it", u.Redacted(), err)
		}
		t.Skipf("RabbitMQ is not reachable at %s: %v", u.Redacted(), err)
	}
	t.Cleanup(func() { c.Close() })
	return amqpBroker{url: u, conn: c}
}

// consumerURL is the broker's url as a consumer's, at host (the broker's
// own when ""), with query.
func (b amqpBroker) consumerURL(host, query string) string {
	u := *b.url
	if host != "" {
		u.Host = host
	}
	u.RawQuery = query
	return u.String()
}

func amqpSuffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// amqpQueue is a queue of the test's own, deleted when it ends, whose
// messages the test collects as they arrive.
type amqpQueue struct {
	name string
	mu   sync.Mutex
	got  []amqp.Delivery
}

// queue declares a queue, bound to exchange by pattern unless exchange
// is "", and collects its messages.
func (b amqpBroker) queue(t *testing.T, exchange, pattern string) *amqpQueue {
	t.Helper()
	q := &amqpQueue{}
	q.name = b.consume(t, exchange, pattern, func(d amqp.Delivery) {
		q.mu.Lock()
		q.got = append(q.got, d)
		q.mu.Unlock()
	})
	return q
}

// consume declares a queue of the test's own, bound to exchange by
// pattern unless exchange is "", and passes each of its messages to each
// as it arrives; it returns the queue's name.
func (b amqpBroker) consume(t *testing.T, exchange, pattern string, each func(amqp.Delivery)) string {
	t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	name := "intake-e2e-q-" + amqpSuffix()
	if _, err := ch.QueueDeclare(name, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if exchange != "" {
		if err := ch.QueueBind(name, pattern, exchange, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	deliveries, err := ch.Consume(name, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			each(d)
		}
	}()
	t.Cleanup(func() {
		if _, err := ch.QueueDelete(name, false, false, false); err != nil {
			t.Errorf("delete queue %s: %v", name, err)
		}
		ch.Close()
		<-done
	})
	return name
}

// exchange declares a topic exchange, deleted when the test ends.
func (b amqpBroker) exchange(t *testing.T) string {
	t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	name := "intake-e2e-x-" + amqpSuffix()
	if err := ch.ExchangeDeclare(name, amqp.ExchangeTopic, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ch.ExchangeDelete(name, false, false); err != nil {
			t.Errorf("delete exchange %s: %v", name, err)
		}
		ch.Close()
	})
	return name
}

// messages is every message the queue received so far.
func (q *amqpQueue) messages() []amqp.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]amqp.Delivery(nil), q.got...)
}

// amqpHeader is a message's header as a string.
func amqpHeader(d amqp.Delivery, name string) string {
	s, _ := d.Headers[name].(string)
	return s
}

// TestARabbitMQConsumerReceivesSignedEventsAndHoldsThemWhilePaused: on
// the real binary, a consumer whose url is a RabbitMQ exchange gets each
// event as a persistent message routed by its type, the envelope as body,
// signed as over HTTP, message_id the event id; its url reads with the
// password as ***; `intake consumers test` publishes intake.test and
// answers handled; paused, its events wait and nothing is published;
// resumed, every one arrives once.
func TestARabbitMQConsumerReceivesSignedEventsAndHoldsThemWhilePaused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	b := newAMQPBroker(t)
	exchange := b.exchange(t)
	q := b.queue(t, exchange, "events.#")
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	id, secret := addBrokerConsumer(t, s, b.consumerURL("", "exchange="+exchange+"&routing_key=events.{type}"), nil)

	var cons struct{ URL string }
	s.api(t, "GET", "/api/v1/consumers/"+id, nil, &cons)
	if pw, ok := b.url.User.Password(); ok && (strings.Contains(cons.URL, ":"+pw+"@") || !strings.Contains(cons.URL, ":***@")) {
		t.Errorf("the consumer's url reads %q, want its password as ***", cons.URL)
	}

	const n = 5
	postGitHubN(t, s, path, "amqp-", n)
	eventually(t, 30*time.Second, "every event published", func() bool { return len(q.messages()) == n })
	seen := map[string]bool{}
	for _, m := range q.messages() {
		if m.Exchange != exchange || m.RoutingKey != "events.github.issues.opened" {
			t.Errorf("published to exchange %q with routing key %q, want %q and the key of the event's type", m.Exchange, m.RoutingKey, exchange)
		}
		var env struct{ ID, Type string }
		if err := json.Unmarshal(m.Body, &env); err != nil || env.Type != "github.issues.opened" {
			t.Fatalf("body %q is not the event's envelope: %v", m.Body, err)
		}
		if m.MessageId != env.ID || amqpHeader(m, "webhook-id") != env.ID {
			t.Errorf("message_id %q, webhook-id %q, want the event id %q", m.MessageId, amqpHeader(m, "webhook-id"), env.ID)
		}
		unix, _ := strconv.ParseInt(amqpHeader(m, "webhook-timestamp"), 10, 64)
		if want, _ := delivery.Sign(secret, env.ID, unix, m.Body); amqpHeader(m, "webhook-signature") != want {
			t.Errorf("webhook-signature %q does not verify (want %q)", amqpHeader(m, "webhook-signature"), want)
		}
		if m.ContentType != "application/json" || amqpHeader(m, "content-type") != "application/json" {
			t.Errorf("content type %q, headers %v: want application/json", m.ContentType, m.Headers)
		}
		if m.DeliveryMode != amqp.Persistent {
			t.Errorf("delivery mode %d, want persistent", m.DeliveryMode)
		}
		seen[env.ID] = true
	}
	for _, e := range s.events(t) {
		if !seen[e.ID] {
			t.Errorf("event %s was not published", e.ID)
		}
	}

	var res struct {
		EventID string `json:"event_id"`
		Outcome string `json:"outcome"`
		Error   string `json:"error"`
	}
	out := s.cli(t, "consumers", "test", id, "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Outcome != "handled" {
		t.Fatalf("consumers test answered (%v):\n%s", err, out)
	}
	eventually(t, 30*time.Second, "the test event published", func() bool { return len(q.messages()) == n+1 })
	if m := q.messages()[n]; m.RoutingKey != "events.intake.test" || m.MessageId != res.EventID {
		t.Errorf("the test event went with routing key %q, message_id %q; want events.intake.test and %q", m.RoutingKey, m.MessageId, res.EventID)
	}

	if out := s.cli(t, "consumers", "pause", id, "--json"); !json.Valid([]byte(out)) {
		t.Fatalf("consumers pause answered:\n%s", out)
	}
	postGitHubN(t, s, path, "amqp-paused-", n)
	eventually(t, 30*time.Second, "the paused consumer's deliveries are held", func() bool { return s.health(t, id).Held == n })
	if got := len(q.messages()); got != n+1 {
		t.Fatalf("%d messages published while paused, want none", got-n-1)
	}
	s.cli(t, "consumers", "resume", id)
	eventually(t, 30*time.Second, "every held event published on resume", func() bool { return len(q.messages()) == 2*n+1 })
	ids := map[string]int{}
	for _, m := range q.messages() {
		ids[m.MessageId]++
	}
	for _, e := range s.events(t) {
		if ids[e.ID] != 1 {
			t.Errorf("event %s published %d times, want once", e.ID, ids[e.ID])
		}
	}
}

// TestARabbitMQConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack:
// on the real binary, a consumer of a RabbitMQ queue whose broker refuses
// connections fails its calls and trips its breaker; nothing dies; once
// the broker is reachable the breaker's probe succeeds and every event is
// published, once each, with the event id as message_id. The same again
// when the broker drops the connection intake keeps to it.
func TestARabbitMQConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	b := newAMQPBroker(t)
	q := b.queue(t, "", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relay := &brokerRelay{addr: ln.Addr().String(), to: b.url.Host}
	ln.Close() // the broker is down: connections to its address are refused

	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	id, secret := addBrokerConsumer(t, s, b.consumerURL(relay.addr, "queue="+q.name), map[string]any{"breaker_failures": 3})

	const n = 8
	postGitHubN(t, s, path, "amqp-down-", n)
	lastError := waitTripped(t, s, id, 30*time.Second)
	wantNothingDeliveredYet(t, s)
	if pw, ok := b.url.User.Password(); ok && strings.Contains(lastError, ":"+pw+"@") {
		t.Errorf("the last error shows the broker's password: %s", lastError)
	}
	if len(q.messages()) != 0 {
		t.Fatal("a message was published while the broker was down")
	}

	relay.up(t)
	everyEventOnce := func(want int) {
		t.Helper()
		waitEveryEventDelivered(t, s, 90*time.Second)
		// A delivery counts as delivered once the broker confirmed it,
		// which may be a moment before the queue's consumer has it.
		eventually(t, 10*time.Second, "every confirmed message in the queue", func() bool { return len(q.messages()) >= want })
		msgs := q.messages()
		ids := map[string]int{}
		for _, m := range msgs {
			ids[m.MessageId]++
			unix, _ := strconv.ParseInt(amqpHeader(m, "webhook-timestamp"), 10, 64)
			if want, _ := delivery.Sign(secret, m.MessageId, unix, m.Body); amqpHeader(m, "webhook-signature") != want {
				t.Errorf("message %s: webhook-signature does not verify", m.MessageId)
			}
		}
		wantEachEventOnce(t, s, ids, want)
	}
	everyEventOnce(n)
	t.Logf("last error while the broker was down: %s", lastError)

	// The broker goes away under the connection intake keeps: the next
	// calls fail, and once it is back they go out on a new connection.
	relay.down()
	postGitHubN(t, s, path, "amqp-dropped-", n)
	lastError = waitTripped(t, s, id, 30*time.Second) // its calls failing on the dropped connection
	if got := len(q.messages()); got != n {
		t.Fatalf("%d messages published while the broker was gone", got-n)
	}
	relay.up(t)
	everyEventOnce(2 * n)
	t.Logf("last error once the connection dropped: %s", lastError)
}

// TestARabbitMQURLIntakeCannotPublishToIsRefusedAndNothingIsSaved: on the
// real binary, an amqp url that names no exchange nor queue, names both,
// or asks for what intake does not do is 400 naming the fault, and no
// consumer is saved.
func TestARabbitMQURLIntakeCannotPublishToIsRefusedAndNothingIsSaved(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	s := start(t, t.TempDir())
	setupGitHub(t, s)
	org := firstOrgID(t, s)
	const host = "amqp://guest:guest@127.0.0.1:5672/"
	for u, says := range map[string]string{
		host:                                          "names no exchange nor queue",
		host + "?exchange=intake&queue=billing":       "names both an exchange and a queue",
		host + "?queue=billing&routing_key=x":         "routing_key goes with exchange",
		host + "?exchange=has%20space":                "is not an exchange name",
		host + "?exchange=intake&confirm=false":       "unknown parameter",
		host + "?queue=q&cacertfile=/etc/passwd":      "names a file on intake's host",
		host + "?queue=q&heartbeat=soon":              "is not a number of seconds",
		"amqp://guest:guest@127.0.0.1:99999/?queue=q": "is not a port number",
	} {
		in := map[string]any{"org_id": org, "name": "bus", "app": "bus", "url": u, "event_types": []string{"github.*"}}
		status, body := s.try(t, "POST", "/api/v1/consumers", in)
		if status != http.StatusBadRequest || !strings.Contains(body, says) {
			t.Errorf("url %s: %d %s, want 400 saying %q", u, status, body, says)
		}
		if strings.Contains(body, "guest:guest@") {
			t.Errorf("url %s: the answer shows the password: %s", u, body)
		}
	}
	var list struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/consumers", nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d consumers saved from refused urls", len(list.Items))
	}
}
