package broker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
)

// natsAddr is the NATS server with JetStream the tests publish to.
func natsAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("INTAKE_TEST_NATS")
	if addr == "" {
		addr = "127.0.0.1:4222"
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NATS with JetStream is not reachable at %s (%v): CI must run it", addr, err)
		}
		t.Skipf("NATS is not reachable at %s: %v", addr, err)
	}
	c.Close()
	return addr
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// testStream is a stream of the test's own capturing "<prefix>.>",
// deleted when the test ends.
type testStream struct {
	addr   string
	name   string
	prefix string
	stream jetstream.Stream
}

func newTestStream(t *testing.T) testStream {
	t.Helper()
	addr := natsAddr(t)
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	suffix := randomSuffix(t)
	ts := testStream{addr: addr, name: "INTAKE_TEST_" + suffix, prefix: "intake-test-" + suffix}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts.stream, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       ts.name,
		Subjects:   []string{ts.prefix + ".>"},
		Duplicates: time.Minute,
		Storage:    jetstream.MemoryStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, ts.name); err != nil {
			t.Errorf("delete stream %s: %v", ts.name, err)
		}
		nc.Close()
	})
	return ts
}

// url is a nats url to the server with path and query.
func (ts testStream) url(pathAndQuery string) string {
	return "nats://" + ts.addr + "/" + pathAndQuery
}

func openTestNATS(t *testing.T, raw string, dial delivery.Dialer, timeout time.Duration) *natsPublisher {
	t.Helper()
	return openTestPublisher(t, raw, dial, timeout).(*natsPublisher)
}

func (ts testStream) last(t *testing.T, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := ts.stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("read back %s: %v", subject, err)
	}
	return m
}

func (ts testStream) count(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := ts.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestNATSPublishesBodyHeadersAndMsgIDAsAcknowledged(t *testing.T) {
	ts := newTestStream(t)
	pub := openTestNATS(t, ts.url(ts.prefix+".events"), nil, 5*time.Second)
	p := testPublication("evt_"+randomSuffix(t), "invoice.paid", "")
	p.Header.Set("Nats-Rollup", "all") // a transform's header cannot steer JetStream

	r := pub.Publish(context.Background(), p)
	if r.Outcome != intake.DeliveryHandled || r.Err != "" || r.Latency <= 0 {
		t.Fatalf("publish: %+v", r)
	}
	m := ts.last(t, ts.prefix+".events")
	if !bytes.Equal(m.Data, p.Body) {
		t.Errorf("body %q, want %q byte for byte", m.Data, p.Body)
	}
	if got := m.Header.Get("Nats-Msg-Id"); got != p.ID {
		t.Errorf("Nats-Msg-Id %q, want %q", got, p.ID)
	}
	for k, want := range p.Header {
		k = strings.ToLower(k)
		if k == "nats-rollup" {
			continue
		}
		if got := m.Header.Values(k); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	for k := range m.Header {
		if strings.EqualFold(k, "nats-rollup") {
			t.Errorf("header %s was published: it would roll the stream up", k)
		}
	}
}

func TestNATSExpandsTypeAndKeyInTheSubject(t *testing.T) {
	ts := newTestStream(t)
	pub := openTestNATS(t, ts.url(ts.prefix+".{type}.{key}"), nil, 5*time.Second)

	p := testPublication("evt_"+randomSuffix(t), "invoice.paid", "")
	p.OrderKey = "cus_42"
	if r := pub.Publish(context.Background(), p); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish with a key: %+v", r)
	}
	if m := ts.last(t, ts.prefix+".invoice.paid.cus_42"); m.Header.Get("Nats-Msg-Id") != p.ID {
		t.Errorf("message on the key's subject is %q, want %q", m.Header.Get("Nats-Msg-Id"), p.ID)
	}

	q := testPublication("evt_"+randomSuffix(t), "invoice.paid", "")
	if r := pub.Publish(context.Background(), q); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish without a key: %+v", r)
	}
	if m := ts.last(t, ts.prefix+".invoice.paid."+delivery.NoKey); m.Header.Get("Nats-Msg-Id") != q.ID {
		t.Errorf("message without a key is %q, want %q", m.Header.Get("Nats-Msg-Id"), q.ID)
	}

	// Whatever a key holds, it is one token of the subject.
	odd := testPublication("evt_"+randomSuffix(t), "invoice.paid", "")
	odd.OrderKey = "conn/R_1 a.b*>"
	if r := pub.Publish(context.Background(), odd); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish with a key that is no token: %+v", r)
	}
	if m := ts.last(t, ts.prefix+".invoice.paid.conn/R_1_a_b__"); m.Header.Get("Nats-Msg-Id") != odd.ID {
		t.Errorf("message with an odd key is %q, want %q", m.Header.Get("Nats-Msg-Id"), odd.ID)
	}
}

func TestNATSRepublishOfTheSameIDIsStoredOnceAndHandled(t *testing.T) {
	ts := newTestStream(t)
	pub := openTestNATS(t, ts.url(ts.prefix+".events"), nil, 5*time.Second)
	p := testPublication("evt_"+randomSuffix(t), "invoice.paid", "")

	first, err := pub.publish(context.Background(), p)
	if err != nil || first.Duplicate {
		t.Fatalf("first publish: %+v, %v", first, err)
	}
	second, err := pub.publish(context.Background(), p)
	if err != nil || !second.Duplicate || second.Sequence != first.Sequence {
		t.Fatalf("republish: %+v, %v; want a duplicate of sequence %d", second, err, first.Sequence)
	}
	if r := pub.Publish(context.Background(), p); r.Outcome != intake.DeliveryHandled {
		t.Errorf("a duplicate is handled: %+v", r)
	}
	if n := ts.count(t); n != 1 {
		t.Errorf("stream holds %d messages, want 1", n)
	}
}

func TestNATSStreamParameterRequiresThatStreamToAcknowledge(t *testing.T) {
	ts := newTestStream(t)
	p := testPublication("evt_"+randomSuffix(t), "invoice.paid", "")

	ours := openTestNATS(t, ts.url(ts.prefix+".events?stream="+ts.name), nil, 5*time.Second)
	if r := ours.Publish(context.Background(), p); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish to the stream named: %+v", r)
	}

	other := openTestNATS(t, ts.url(ts.prefix+".events?stream=ELSEWHERE_"+randomSuffix(t)), nil, 5*time.Second)
	r := other.Publish(context.Background(), testPublication("evt_"+randomSuffix(t), "invoice.paid", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "is not captured by stream") {
		t.Errorf("publish expecting another stream: %+v", r)
	}
	if n := ts.count(t); n != 1 {
		t.Errorf("stream holds %d messages, want 1", n)
	}
}

func TestNATSSubjectNoStreamCapturesIsRetry(t *testing.T) {
	addr := natsAddr(t)
	subject := "intake-nostream-" + randomSuffix(t) + ".events"
	pub := openTestNATS(t, "nats://"+addr+"/"+subject, nil, 5*time.Second)
	r := pub.Publish(context.Background(), testPublication("evt_1", "invoice.paid", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "no JetStream stream captures subject \""+subject+"\"") {
		t.Errorf("publish where no stream listens: %+v", r)
	}
}

func TestNATSConcurrentPublishesAreAllAcknowledged(t *testing.T) {
	ts := newTestStream(t)
	pub := openTestNATS(t, ts.url(ts.prefix+".events"), nil, 10*time.Second)
	const n = 64
	var wg sync.WaitGroup
	results := make([]delivery.Result, n)
	for i := range n {
		wg.Go(func() {
			results[i] = pub.Publish(context.Background(), testPublication(fmt.Sprintf("evt_%d", i), "invoice.paid", ""))
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.Outcome != intake.DeliveryHandled {
			t.Errorf("publish %d: %+v", i, r)
		}
	}
	if got := ts.count(t); got != n {
		t.Errorf("stream holds %d messages, want %d", got, n)
	}
}

// cuttable is a dialer whose connections the test can break.
type cuttable struct {
	dials atomic.Int32
	mu    sync.Mutex
	conns []net.Conn
}

func (c *cuttable) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := delivery.Policy{}.Dialer(5*time.Second)(ctx, network, addr)
	if err == nil {
		c.dials.Add(1)
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, err
}

func (c *cuttable) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
}

func TestNATSBrokenConnectionIsRemadeOnTheNextPublish(t *testing.T) {
	ts := newTestStream(t)
	var c cuttable
	pub := openTestNATS(t, ts.url(ts.prefix+".events"), c.dial, 5*time.Second)
	if r := pub.Publish(context.Background(), testPublication("evt_a", "invoice.paid", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish: %+v", r)
	}
	c.cut()
	// The first publish may meet the broken connection before the client
	// saw it break; the one after goes over a new connection.
	pub.Publish(context.Background(), testPublication("evt_b", "invoice.paid", ""))
	if r := pub.Publish(context.Background(), testPublication("evt_c", "invoice.paid", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish after the connection broke: %+v", r)
	}
	if got := c.dials.Load(); got != 2 {
		t.Errorf("%d connections made, want 2", got)
	}
}

func TestNATSUnreachableBrokerFailsWithTheAddressAndNoPassword(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	u, _ := url.Parse("nats://intake:s3cret-pass@" + addr + "/intake.events")
	_, err = openNATS(u, delivery.Policy{}.Dialer(time.Second), time.Second)
	if err == nil {
		t.Fatal("open where nothing listens succeeded")
	}
	if !strings.Contains(err.Error(), "connect to NATS at "+addr) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("error %q does not say what was refused", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q prints the password", err)
	}
}

func TestNATSAddressPolicyApplies(t *testing.T) {
	addr := natsAddr(t)
	u, _ := url.Parse("nats://" + addr + "/intake.events")
	deny := delivery.Policy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	_, err := openNATS(u, deny.Dialer(time.Second), time.Second)
	if err == nil || !strings.Contains(err.Error(), "refused by the consumer address policy") {
		t.Errorf("open to a denied address: %v", err)
	}
}

// silentServer accepts connections and, when greet, answers as a NATS
// server would up to its handshake, then never acknowledges anything.
func silentServer(t *testing.T, greet bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				if !greet {
					c.Read(make([]byte, 1)) // held until the client leaves
					return
				}
				fmt.Fprintf(c, "INFO {\"server_id\":\"silent\",\"version\":\"2.10.0\",\"proto\":1,\"headers\":true,\"max_payload\":1048576}\r\n")
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "PING") {
						fmt.Fprintf(c, "PONG\r\n")
					}
				}
			})
		}
	})
	return l.Addr().String()
}

func TestNATSServerThatNeverAcknowledgesIsRetryWithinTheTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := silentServer(t, true)
	pub := openTestNATS(t, "nats://"+addr+"/intake.events", nil, timeout)
	start := time.Now()
	r := pub.Publish(context.Background(), testPublication("evt_1", "invoice.paid", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "did not acknowledge within 300ms") {
		t.Errorf("publish never acknowledged: %+v", r)
	}
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("publish took %s, past the %s timeout", took, timeout)
	}
}

func TestNATSListenerThatNeverGreetsEndsTheConnectWithinTheTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := silentServer(t, false)
	u, _ := url.Parse("nats://" + addr + "/intake.events")
	start := time.Now()
	_, err := openNATS(u, delivery.Policy{}.Dialer(timeout), timeout)
	if err == nil || !strings.Contains(err.Error(), "connect to NATS at "+addr) {
		t.Errorf("open to a silent listener: %v", err)
	}
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("open took %s, past the %s timeout", took, timeout)
	}
}

func TestNATSCloseReleasesTheConnectionAndRefusesPublishes(t *testing.T) {
	ts := newTestStream(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	u, _ := url.Parse(ts.url(ts.prefix + ".events"))
	pub, err := openNATS(u, delivery.Policy{}.Dialer(5*time.Second), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r := pub.Publish(context.Background(), testPublication("evt_1", "invoice.paid", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish: %+v", r)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	r := pub.Publish(context.Background(), testPublication("evt_2", "invoice.paid", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "closed") {
		t.Errorf("publish after close: %+v", r)
	}
}

func TestNATSCheckRefusesURLsThatCannotWork(t *testing.T) {
	bad := map[string]string{
		"nats://127.0.0.1:4222":                           "needs a subject",
		"nats://127.0.0.1:4222/":                          "needs a subject",
		"nats://127.0.0.1:4222/intake events":             "whitespace",
		"nats://127.0.0.1:4222/intake%20events":           "whitespace",
		"nats://127.0.0.1:4222/intake.*":                  "wildcard",
		"nats://127.0.0.1:4222/intake.>":                  "wildcard",
		"nats://127.0.0.1:4222/intake..events":            "empty token",
		"nats://127.0.0.1:4222/.intake":                   "empty token",
		"nats://127.0.0.1:4222/intake.":                   "empty token",
		"nats://127.0.0.1:4222/intake.{org}":              "placeholder",
		"nats://127.0.0.1:4222/intake?stream=":            "stream",
		"nats://127.0.0.1:4222/intake?stream=A.B":         "stream",
		"nats://127.0.0.1:4222/intake?stream=A%20B":       "stream",
		"nats://127.0.0.1:4222/intake?tls=maybe":          "tls",
		"nats://127.0.0.1:4222/intake?queue=x":            "unknown parameter \"queue\"",
		"nats://:4222/intake":                             "no host",
		"nats://u:s3cret@127.0.0.1:4222/intake?subject=a": "unknown parameter",
	}
	good := []string{
		"nats://127.0.0.1:4222/intake.events",
		"nats://127.0.0.1/intake.events",
		"nats://u:p@nats.internal:4222/intake.{type}.{key}?stream=INTAKE",
		"nats://token@nats.internal/intake-events?tls=1",
		"NATS://127.0.0.1:4222/intake_events?stream=INTAKE-1&tls=0",
	}
	wantChecked(t, bad, good, "s3cret")
	if !All().Names("nats://127.0.0.1:4222/intake") {
		t.Error("nats is no broker scheme")
	}
}
