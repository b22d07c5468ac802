package broker

import (
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/testkit"
)

// testPublication is a call as the sender makes one: a body that is not
// all text, the Standard Webhooks headers, traceparent and a transform's
// headers, one of them with two values.
func testPublication(id, typ, key string) delivery.Publication {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,b2xkZXI=")
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Set("X-Tenant", "acme")
	h.Add("X-Transform", "one")
	h.Add("X-Transform", "two")
	return delivery.Publication{ID: id, Type: typ, OrderKey: key, Header: h, Body: []byte(`{"id":"` + id + `","n":1}` + "\n\x00\xff")}
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
		err = All().Check(u)
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
		if err := All().Check(u); err != nil {
			t.Errorf("%s refused: %v", raw, err)
		}
	}
}

// openTestPublisher checks raw and opens a publisher to it through dial
// (nil: the default policy's), closed when the test ends.
func openTestPublisher(t *testing.T, raw string, dial delivery.Dialer, timeout time.Duration) delivery.Publisher {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := All().Check(u); err != nil {
		t.Fatalf("check %s: %v", raw, err)
	}
	if dial == nil {
		dial = delivery.DefaultPolicy().Dialer(timeout)
	}
	p, err := All()[strings.ToLower(u.Scheme)].Open(u, dial, timeout)
	if err != nil {
		t.Fatalf("open %s: %v", raw, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// brokerGreetings are services a broker consumer could be pointed at:
// ones that speak first, and one that answers in a broker's own error
// form with the peer's text in it.
var brokerGreetings = map[string][]byte{
	"nats":         testkit.NATSGreeting,
	"mariadb":      testkit.MariaDBGreeting,
	"error answer": []byte("-ERR " + testkit.Marker + " internal banner\r\n"),
}

func TestRedisDeliveryErrorNeverCarriesPeerBytes(t *testing.T) {
	for name, greeting := range brokerGreetings {
		addr := testkit.Banner(t, greeting)
		pub := openRedisTest(t, "redis://"+addr+"/0?stream=s", 2*time.Second)
		r := pub.Publish(context.Background(), redisPublication("evt_banner"))
		t.Logf("%s: %s", name, r.Err)
		if r.Outcome != intake.DeliveryRetry || !strings.HasPrefix(r.Err, "redis redis://"+addr+"/0?stream=s") {
			t.Errorf("%s: %+v, want a retry naming the redis", name, r)
		}
		testkit.NoPeerBytes(t, name, r.Err, greeting)
	}
}

func TestKafkaDeliveryErrorNeverCarriesPeerBytes(t *testing.T) {
	for name, greeting := range brokerGreetings {
		addr := testkit.Banner(t, greeting)
		p := openKafkaURL(t, "kafka://"+addr+"/events", nil, time.Second)
		r := p.Publish(context.Background(), testPublication("evt_1", "order.created", ""))
		t.Logf("%s: %s", name, r.Err)
		if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, addr) {
			t.Errorf("%s: %+v, want a retry naming the broker", name, r)
		}
		testkit.NoPeerBytes(t, name, r.Err, greeting)
		// Kafka reads an answer's first 4 bytes as its size.
		size := strconv.FormatUint(uint64(binary.BigEndian.Uint32(greeting)), 10)
		if strings.Contains(r.Err, size) {
			t.Errorf("%s: the recorded error %q carries the peer's first 4 bytes (%s)", name, r.Err, size)
		}
	}
}

func TestNATSDeliveryErrorNeverCarriesPeerBytes(t *testing.T) {
	s := delivery.NewSender(delivery.Options{Policy: delivery.DefaultPolicy(), Timeout: 2 * time.Second, Brokers: All()})
	t.Cleanup(func() { s.Close() })
	greetings := map[string][]byte{
		// A server that greets as NATS does, then refuses in its own words.
		"error after the greeting":  []byte("INFO {\"server_id\":\"x\",\"max_payload\":1048576}\r\n-ERR '" + testkit.Marker + " internal'\r\n"),
		"greeting that is not JSON": []byte("INFO {" + testkit.Marker + "}\r\n"),
	}
	for name, greeting := range brokerGreetings {
		greetings[name] = greeting
	}
	for name, greeting := range greetings {
		addr := testkit.Banner(t, greeting)
		r := s.Deliver(context.Background(), "cons_1", "nats://"+addr+"/orders", []string{delivery.NewSecret()},
			delivery.Publication{ID: "evt_1", Type: "order.created", Body: []byte(`{}`)}, time.Now())
		t.Logf("%s: %s", name, r.Err)
		if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, addr) {
			t.Errorf("%s: %+v, want a retry naming the server", name, r)
		}
		testkit.NoPeerBytes(t, name, r.Err, greeting)
		if strings.Contains(r.Err, "invalid character") {
			t.Errorf("%s: the recorded error %q quotes the greeting", name, r.Err)
		}
	}
}

// A broker's refusal is named by its reply code, never its reply text: the
// text is the other side's words.
func TestAMQPDeliveryErrorNamesTheBrokersCodeNotItsWords(t *testing.T) {
	amqpTestBroker(t)
	exchange := amqpName("intake-test-x")
	p := openTestAMQP(t, amqpURL(t, "exchange="+exchange+"&routing_key=k"), nil, 5*time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "x", ""))
	t.Log(r.Err)
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "404 NOT_FOUND") || !strings.Contains(r.Err, exchange) {
		t.Fatalf("result %+v, want the code and the exchange named", r)
	}
	if strings.Contains(r.Err, "vhost") || strings.Contains(r.Err, "NOT_FOUND - ") {
		t.Fatalf("the recorded error %q carries the broker's reply text", r.Err)
	}
}

// A broker keeps nothing of what its peer sent, even a peer that answers
// as an HTTP server does (§18: never a non-HTTP peer's bytes).
func TestABrokerDestinationKeepsNoAnswer(t *testing.T) {
	answer := []byte("HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"error\":\"boom\"}")
	s := delivery.NewSender(delivery.Options{Policy: delivery.DefaultPolicy(), Timeout: time.Second, Brokers: All()})
	t.Cleanup(func() { s.Close() })
	for _, url := range []string{"nats://%s/orders", "redis://%s/0?stream=s", "kafka://%s/events", "amqp://%s/?exchange=x&routing_key=k"} {
		addr := testkit.Banner(t, answer)
		url = strings.Replace(url, "%s", addr, 1)
		r := s.Deliver(context.Background(), "cons_"+url[:4], url, []string{delivery.NewSecret()},
			delivery.Publication{ID: "evt_1", Type: "order.created", Body: []byte(`{}`)}, time.Now())
		if r.Response != nil || r.Outcome != intake.DeliveryRetry {
			t.Errorf("%s: %+v, want a retry that keeps no answer", url, r)
		}
	}
}
