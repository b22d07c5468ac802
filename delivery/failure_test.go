package delivery

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
)

// peerBytes fails the test when the recorded error holds anything the other
// side sent: the marker, or the greeting's first line as Go would quote it.
func peerBytes(t *testing.T, what, recorded string, greeting []byte) {
	t.Helper()
	first, _, _ := strings.Cut(string(greeting), "\n")
	quoted := strconv.Quote(first)
	if strings.Contains(recorded, testkit.Marker) || strings.Contains(recorded, quoted[1:len(quoted)-1]) {
		t.Errorf("%s: the recorded error %q carries the peer's bytes", what, recorded)
	}
}

func TestFailedCallNamesWhatFailedAndNeverCarriesThePeersBytes(t *testing.T) {
	ctx := context.Background()
	s := NewSender(Options{Policy: DefaultPolicy(), Timeout: 5 * time.Second})
	send := func(url string) Result {
		return send(ctx, s, url, NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
	}
	for name, greeting := range map[string][]byte{"nats": testkit.NATSGreeting, "mariadb": testkit.MariaDBGreeting} {
		addr := testkit.Banner(t, greeting)
		for url, want := range map[string]string{
			"http://" + addr + "/hooks":  "malformed HTTP answer",
			"https://" + addr + "/hooks": "TLS handshake failed",
		} {
			r := send(url)
			if r.Outcome != intake.DeliveryRetry || r.Err != want {
				t.Errorf("%s over %s: %+v, want %q", name, url[:strings.Index(url, ":")], r, want)
			}
			peerBytes(t, name, r.Err, greeting)
		}
	}

	// A port nobody listens on, a peer that hangs up without a word, and a
	// certificate nobody vouches for.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if r := send("http://" + closed + "/"); r.Err != "connection refused" {
		t.Errorf("closed port: %+v", r)
	}
	hangUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangUp.Close()
	go func() {
		c, err := hangUp.Accept()
		if err != nil {
			return
		}
		// The whole request is read first: closing over unread bytes
		// would reset the connection instead.
		if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.Copy(io.Discard, req.Body)
		}
		c.Close()
	}()
	if r := send("http://" + hangUp.Addr().String() + "/"); r.Err != "connection closed without an answer" {
		t.Errorf("a peer that hangs up: %+v", r)
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	if r := send(tlsSrv.URL); r.Err != "TLS certificate not trusted" {
		t.Errorf("self-signed certificate: %+v", r)
	}
	if r := send("http://" + closed + "/"); strings.Contains(r.Err, closed) {
		t.Errorf("the error names the address: %q", r.Err)
	}
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
		peerBytes(t, name, r.Err, greeting)
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
		peerBytes(t, name, r.Err, greeting)
		// Kafka reads an answer's first 4 bytes as its size.
		size := strconv.FormatUint(uint64(binary.BigEndian.Uint32(greeting)), 10)
		if strings.Contains(r.Err, size) {
			t.Errorf("%s: the recorded error %q carries the peer's first 4 bytes (%s)", name, r.Err, size)
		}
	}
}

func TestNATSDeliveryErrorNeverCarriesPeerBytes(t *testing.T) {
	s := NewSender(Options{Policy: DefaultPolicy(), Timeout: 2 * time.Second})
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
		r := s.Deliver(context.Background(), "cons_1", "nats://"+addr+"/orders", []string{NewSecret()},
			Publication{ID: "evt_1", Type: "order.created", Body: []byte(`{}`)}, time.Now())
		t.Logf("%s: %s", name, r.Err)
		if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, addr) {
			t.Errorf("%s: %+v, want a retry naming the server", name, r)
		}
		peerBytes(t, name, r.Err, greeting)
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

// A failure describe has no name for is recorded as "request failed"
// alone: the error's text quotes the consumer's URL, with the user and the
// query (a token) it may carry.
func TestFailedCallWithoutANameNeverCarriesTheConsumersURL(t *testing.T) {
	s := NewSender(Options{Policy: DefaultPolicy(), Timeout: 2 * time.Second})
	// Port 99999 fails in the dialer, for no reason connFailure names.
	const url = "http://intake-user:hunter2@127.0.0.1:99999/hooks?token=tok_0123456789"
	r := send(context.Background(), s, url, NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
	if r.Outcome != intake.DeliveryRetry || r.Err != "request failed" {
		t.Errorf("%+v, want a retry saying only \"request failed\"", r)
	}
	for _, part := range []string{"intake-user", "hunter2", "tok_0123456789", "127.0.0.1", "/hooks"} {
		if strings.Contains(r.Err, part) {
			t.Errorf("the recorded error %q carries the consumer url's %q", r.Err, part)
		}
	}
}
