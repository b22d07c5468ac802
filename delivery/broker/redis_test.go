package broker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/testkit"
)

// redisTestAddr is the Redis these tests publish to: the one on this
// machine and CI's.
const redisTestAddr = "127.0.0.1:6379"

// redisNoLeak checks, once the test and its cleanups are done, that no
// goroutine it started is left. Call it first.
func redisNoLeak(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// redisReader is a plain client to the test Redis, to read back what was
// published. Without a Redis the test fails in CI and is skipped elsewhere.
func redisReader(t *testing.T, db int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisTestAddr, DB: db, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s: %v (CI must run Redis)", redisTestAddr, err)
		}
		t.Skipf("redis at %s is not reachable: %v", redisTestAddr, err)
	}
	return c
}

// redisStream is a stream key of the test's own, deleted afterwards.
func redisStream(t *testing.T, c *redis.Client) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	key := "intake-test-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		keys, _ := c.Keys(ctx, key+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return key
}

// openRedisTest opens a publisher to raw through the default address
// policy, closed after the test.
func openRedisTest(t *testing.T, raw string, timeout time.Duration) delivery.Publisher {
	t.Helper()
	return openTestPublisher(t, raw, nil, timeout)
}

func redisEntries(t *testing.T, c *redis.Client, key string) []redis.XMessage {
	t.Helper()
	msgs, err := c.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		t.Fatalf("XRANGE %s: %v", key, err)
	}
	return msgs
}

func redisPublication(id string) delivery.Publication {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", "1717000000")
	h.Set("webhook-signature", "v1,c2lnbmF0dXJl v1,b2xkZXI=")
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Set("Content-Type", "application/json")
	h.Add("X-Tenant", "acme")
	h.Add("X-Tenant", "beta")
	return delivery.Publication{
		ID:     id,
		Type:   "invoice.paid",
		Body:   []byte("{\"id\":\"" + id + "\",\"note\":\"line\\nbreak \xff\x00 raw\"}\n"),
		Header: h,
	}
}

func TestRedisPublishAddsTheBodyByteForByteAndEveryHeaderAsAField(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	pub := openRedisTest(t, "redis://"+redisTestAddr+"/0?stream="+key, 5*time.Second)

	p := redisPublication("evt_1")
	p.Header.Set("webhook-id", "stale") // the event id wins
	r := pub.Publish(context.Background(), p)
	if r.Outcome != intake.DeliveryHandled || r.Err != "" || r.Latency <= 0 {
		t.Fatalf("result %+v, want handled", r)
	}
	msgs := redisEntries(t, c, key)
	if len(msgs) != 1 {
		t.Fatalf("%d entries, want 1", len(msgs))
	}
	got := msgs[0].Values
	want := map[string]any{
		"body":              string(p.Body),
		"webhook-id":        "evt_1",
		"webhook-timestamp": "1717000000",
		"webhook-signature": "v1,c2lnbmF0dXJl v1,b2xkZXI=",
		"traceparent":       "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"content-type":      "application/json",
		"x-tenant":          "acme, beta",
	}
	if len(got) != len(want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("field %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestRedisStreamNamesTheEventTypeAndMaxlenTrimsIt(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	pub := openRedisTest(t, "redis://"+redisTestAddr+"?maxlen=10&stream="+key+".{type}", 5*time.Second)

	const n = 250
	for i := range n {
		p := redisPublication(fmt.Sprintf("evt_%d", i))
		if r := pub.Publish(context.Background(), p); r.Outcome != intake.DeliveryHandled {
			t.Fatalf("publish %d: %+v", i, r)
		}
	}
	if k, _ := c.Exists(context.Background(), key+".{type}").Result(); k != 0 {
		t.Fatal("published to the unexpanded stream name")
	}
	msgs := redisEntries(t, c, key+".invoice.paid")
	// MAXLEN ~ trims whole nodes of entries: about 10, never all n.
	if len(msgs) < 10 || len(msgs) >= n {
		t.Fatalf("%d entries left of %d, want trimmed to about 10", len(msgs), n)
	}
	if last := msgs[len(msgs)-1].Values["webhook-id"]; last != fmt.Sprintf("evt_%d", n-1) {
		t.Fatalf("last entry %v, want the last published", last)
	}
}

func TestRedisPublishesToTheURLsDatabase(t *testing.T) {
	redisNoLeak(t)
	c0, c3 := redisReader(t, 0), redisReader(t, 3)
	key := redisStream(t, c3)
	redisStream(t, c0)
	pub := openRedisTest(t, "redis://"+redisTestAddr+"/3?stream="+key, 5*time.Second)
	if r := pub.Publish(context.Background(), redisPublication("evt_db")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("result %+v", r)
	}
	if n := len(redisEntries(t, c3, key)); n != 1 {
		t.Fatalf("%d entries in database 3, want 1", n)
	}
	if n := len(redisEntries(t, c0, key)); n != 0 {
		t.Fatalf("%d entries in database 0, want none", n)
	}
}

// Redis streams do not deduplicate: a republish (after a lost answer, or
// a replay) is a second entry carrying the same webhook-id, which the
// consumer deduplicates by.
func TestRedisRepublishAddsAnEntryWithTheSameWebhookID(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	pub := openRedisTest(t, "redis://"+redisTestAddr+"/0?stream="+key, 5*time.Second)
	p := redisPublication("evt_again")
	for range 2 {
		if r := pub.Publish(context.Background(), p); r.Outcome != intake.DeliveryHandled {
			t.Fatalf("result %+v", r)
		}
	}
	msgs := redisEntries(t, c, key)
	if len(msgs) != 2 || msgs[0].Values["webhook-id"] != "evt_again" || msgs[1].Values["webhook-id"] != "evt_again" {
		t.Fatalf("entries %v, want two with webhook-id evt_again", msgs)
	}
	if msgs[0].Values["body"] != msgs[1].Values["body"] {
		t.Fatal("the republished body differs")
	}
}

func TestCheckRedisRefusesURLsThatCannotWork(t *testing.T) {
	bad := map[string]string{
		"redis://127.0.0.1:6379/0":                           "names no stream",
		"redis://127.0.0.1:6379/0?stream=":                   "names no stream",
		"redis://127.0.0.1:6379/0?stream=%20":                "names no stream",
		"redis://127.0.0.1:6379/16?stream=s":                 "from 0 to 15",
		"redis://127.0.0.1:6379/-1?stream=s":                 "from 0 to 15",
		"redis://127.0.0.1:6379/zero?stream=s":               "from 0 to 15",
		"redis://127.0.0.1:6379/0/1?stream=s":                "from 0 to 15",
		"redis://127.0.0.1:6379/01?stream=s":                 "from 0 to 15",
		"redis://127.0.0.1:0/0?stream=s":                     "not a port number",
		"redis://127.0.0.1:6379/0?stream=s&maxlen=0":         "maxlen",
		"redis://127.0.0.1:6379/0?stream=s&maxlen=ten":       "maxlen",
		"redis://127.0.0.1:6379/0?stream=s&maxlen=":          "maxlen is empty",
		"redis://127.0.0.1:6379/0?stream=a&stream=b":         "stream is given 2 times",
		"redis://127.0.0.1:6379/0?stream=s&db=2":             `unknown parameter "db"`,
		"redis://127.0.0.1:6379/0?stream=s&password=hunter2": `unknown parameter "password"`,
		"redis://127.0.0.1:6379/0?stream=s#frag":             "fragment",
		"rediss:///0?stream=s":                               "no host",
		"redis://u:hunter2@127.0.0.1/99?stream=s":            "from 0 to 15",
	}
	good := []string{
		"redis://127.0.0.1:6379/0?stream=intake",
		"redis://127.0.0.1?stream=intake",
		"redis://127.0.0.1:6379/?stream=intake",
		"redis://:secret@redis.internal:6380/15?stream=events.{type}&maxlen=100000",
		"rediss://intake:secret@redis.example.com/2?stream=intake",
		"REDIS://127.0.0.1/0?stream=intake",
	}
	wantChecked(t, bad, good, "hunter2")
	if s := All().Schemes(); !slices.Contains(s, "redis") || !slices.Contains(s, "rediss") {
		t.Errorf("schemes %v, want redis and rediss", s)
	}
}

// redisFreeAddr is an address where nothing listens (yet).
func redisFreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestRedisUnreachableBrokerIsARetrySayingWhy(t *testing.T) {
	redisNoLeak(t)
	addr := redisFreeAddr(t)
	pub := openRedisTest(t, "redis://intake:hunter2@"+addr+"/0?stream=s", 2*time.Second)
	r := pub.Publish(context.Background(), redisPublication("evt_down"))
	t.Log(r.Err)
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "connection refused") ||
		!strings.Contains(r.Err, "redis://***:***@"+addr) || strings.Contains(r.Err, "hunter2") {
		t.Fatalf("result %+v, want a retry naming the redacted url and the refusal", r)
	}
}

func TestRedisWrongCredentialsAreARetryThatHidesThePassword(t *testing.T) {
	redisNoLeak(t)
	redisReader(t, 0)
	pub := openRedisTest(t, "redis://nobody-intake-test:hunter2@"+redisTestAddr+"/0?stream=s", 2*time.Second)
	r := pub.Publish(context.Background(), redisPublication("evt_auth"))
	t.Log(r.Err)
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "WRONGPASS") || strings.Contains(r.Err, "hunter2") {
		t.Fatalf("result %+v, want a retry saying WRONGPASS without the password", r)
	}
}

func TestRedisBrokerThatNeverAnswersIsARetryWithinTheTimeout(t *testing.T) {
	redisNoLeak(t)
	addr := silentBroker(t)
	const timeout = 300 * time.Millisecond
	pub := openRedisTest(t, "redis://"+addr+"/0?stream=s", timeout)
	start := time.Now()
	r := pub.Publish(context.Background(), redisPublication("evt_hang"))
	took := time.Since(start)
	t.Log(r.Err)
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "did not answer within 300ms") {
		t.Fatalf("result %+v, want a retry saying it did not answer", r)
	}
	if took < timeout/2 || took > 3*timeout {
		t.Fatalf("publish took %v with a %v timeout", took, timeout)
	}
	// A password-less connection to a silent server: the XADD itself
	// waits. With AUTH and SELECT first, the handshake does.
	pub = openRedisTest(t, "redis://u:p@"+addr+"/2?stream=s", timeout)
	if r := pub.Publish(context.Background(), redisPublication("evt_hang")); r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "did not answer") {
		t.Fatalf("result %+v, want a retry saying it did not answer", r)
	}
}

func TestRedisDialsThroughTheAddressPolicy(t *testing.T) {
	redisNoLeak(t)
	u, _ := url.Parse("redis://" + redisTestAddr + "/0?stream=s")
	deny := delivery.Policy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	pub, err := openRedis(u, deny.Dialer(time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	r := pub.Publish(context.Background(), redisPublication("evt_policy"))
	t.Log(r.Err)
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "127.0.0.1") {
		t.Fatalf("result %+v, want the policy's refusal", r)
	}
	want := deny.Dialer(time.Second)
	_, werr := want(context.Background(), "tcp", redisTestAddr)
	ref := werr // the policy's refusal, under the dial's wrapping
	for errors.Unwrap(ref) != nil {
		ref = errors.Unwrap(ref)
	}
	if ref == nil || !strings.Contains(ref.Error(), "refused by the consumer address policy") || !strings.Contains(r.Err, ref.Error()) {
		t.Fatalf("result %q, want the policy's %v", r.Err, werr)
	}
}

func TestRedissSpeaksTLS(t *testing.T) {
	redisNoLeak(t)
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	pub := openRedisTest(t, "rediss://"+addr+"/0?stream=s", 2*time.Second)
	r := pub.Publish(context.Background(), redisPublication("evt_tls"))
	t.Log(r.Err)
	// The test server's certificate is its own: a TLS client refuses it.
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "certificate") {
		t.Fatalf("result %+v, want a retry refusing the server's certificate", r)
	}
	pub.Close()
	srv.CloseClientConnections()
}

// redisProxy forwards connections at addr to the test Redis, as a Redis
// that came back would answer there. drop closes the connections made so
// far, as a Redis that restarted would.
func redisProxy(t *testing.T, addr string) (drop func()) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", redisTestAddr)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); io.Copy(in, out); in.Close() }()
		}
	}()
	drop = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	t.Cleanup(func() {
		l.Close()
		drop()
		wg.Wait()
	})
	return drop
}

func TestRedisPublishSucceedsOnceTheBrokerIsBack(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	addr := redisFreeAddr(t)
	pub := openRedisTest(t, "redis://"+addr+"/0?stream="+key, 2*time.Second)
	p := redisPublication("evt_back")
	if r := pub.Publish(context.Background(), p); r.Outcome != intake.DeliveryRetry {
		t.Fatalf("result %+v while down, want retry", r)
	}
	redisProxy(t, addr)
	if r := pub.Publish(context.Background(), p); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("result %+v once back, want handled", r)
	}
	msgs := redisEntries(t, c, key)
	if len(msgs) != 1 || msgs[0].Values["webhook-id"] != "evt_back" {
		t.Fatalf("entries %v", msgs)
	}
	pub.Close()
}

// A kept connection that Redis closed (a restart, a timeout on its side)
// is noticed before use, so the next publish goes out on a new one.
func TestRedisPublishAfterTheConnectionBrokeGoesOutOnANewOne(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	addr := redisFreeAddr(t)
	drop := redisProxy(t, addr)
	pub := openRedisTest(t, "redis://"+addr+"/0?stream="+key, 2*time.Second)
	if r := pub.Publish(context.Background(), redisPublication("evt_before")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("result %+v", r)
	}
	drop()
	if r := pub.Publish(context.Background(), redisPublication("evt_after")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("result %+v after the connection broke, want handled", r)
	}
	if n := len(redisEntries(t, c, key)); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	pub.Close()
}

func TestRedisConcurrentPublishesAllArrive(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	pub := openRedisTest(t, "redis://"+redisTestAddr+"/0?stream="+key, 5*time.Second)
	const n = 64
	var wg sync.WaitGroup
	results := make([]delivery.Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = pub.Publish(context.Background(), redisPublication(fmt.Sprintf("evt_%02d", i)))
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Outcome != intake.DeliveryHandled {
			t.Fatalf("publish %d: %+v", i, r)
		}
	}
	var ids []string
	for _, m := range redisEntries(t, c, key) {
		ids = append(ids, m.Values["webhook-id"].(string))
	}
	slices.Sort(ids)
	if len(ids) != n || len(slices.Compact(slices.Clone(ids))) != n {
		t.Fatalf("ids %v, want each of %d once", ids, n)
	}
}

// redisCounted remembers the connections a dialer made, to see Close
// close them all.
type redisCounted struct {
	mu    sync.Mutex
	conns map[*redisConn]bool // open?
}

type redisConn struct {
	net.Conn
	of *redisCounted
}

func (c *redisConn) Close() error {
	c.of.mu.Lock()
	c.of.conns[c] = false
	c.of.mu.Unlock()
	return c.Conn.Close()
}

func TestRedisCloseClosesEveryConnection(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	counted := &redisCounted{conns: map[*redisConn]bool{}}
	dial := delivery.DefaultPolicy().Dialer(time.Second)
	u, _ := url.Parse("redis://" + redisTestAddr + "/0?stream=" + key)
	pub, err := openRedis(u, func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		rc := &redisConn{Conn: conn, of: counted}
		counted.mu.Lock()
		counted.conns[rc] = true
		counted.mu.Unlock()
		return rc, nil
	}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pub.Publish(context.Background(), redisPublication(fmt.Sprint("evt_close_", i)))
		}()
	}
	wg.Wait()
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	counted.mu.Lock()
	defer counted.mu.Unlock()
	if len(counted.conns) == 0 || len(counted.conns) > redisPoolSize {
		t.Fatalf("%d connections made, want 1 to %d", len(counted.conns), redisPoolSize)
	}
	for _, open := range counted.conns {
		if open {
			t.Fatal("a connection is open after Close")
		}
	}
	if r := pub.Publish(context.Background(), redisPublication("evt_late")); r.Outcome != intake.DeliveryRetry {
		t.Fatalf("publish after Close: %+v", r)
	}
}

func TestRedisCloseEndsADialUnderWay(t *testing.T) {
	redisNoLeak(t)
	dialing := make(chan struct{}, 1)
	hang := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialing <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	u, _ := url.Parse("redis://redis.internal:6379/0?stream=s")
	pub, err := openRedis(u, hang, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan delivery.Result)
	go func() { done <- pub.Publish(context.Background(), redisPublication("evt_closing")) }()
	<-dialing
	pub.Close()
	select {
	case r := <-done:
		if r.Outcome != intake.DeliveryRetry {
			t.Fatalf("result %+v, want retry", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left the dial hanging")
	}
}

// A consumer whose url is a Redis stream is checked when saved and gets,
// through the delivery.Sender, the entry an HTTP consumer's request would carry:
// the same body, signed the same way.
func TestSenderDeliversToARedisStreamSignedAsOverHTTP(t *testing.T) {
	redisNoLeak(t)
	c := redisReader(t, 0)
	key := redisStream(t, c)
	raw := "redis://" + redisTestAddr + "/0?stream=" + key
	ctx := context.Background()
	if err := delivery.DefaultPolicy().CheckURL(ctx, raw, All()); err != nil {
		t.Fatalf("check %s: %v", raw, err)
	}
	if err := delivery.DefaultPolicy().CheckURL(ctx, "redis://:hunter2@"+redisTestAddr+"/0", All()); err == nil ||
		!strings.Contains(err.Error(), "names no stream") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a url without a stream: %v", err)
	}
	s := delivery.NewSender(delivery.Options{Timeout: 2 * time.Second, Brokers: All()})
	defer s.Close()
	secret := delivery.NewSecret()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"evt_s","type":"stripe.invoice.paid"}`)
	r := s.Deliver(ctx, "cons_redis", raw, []string{secret}, delivery.Publication{ID: "evt_s", Type: "stripe.invoice.paid", Body: body}, now)
	if r.Outcome != intake.DeliveryHandled {
		t.Fatalf("deliver: %+v", r)
	}
	msgs := redisEntries(t, c, key)
	if len(msgs) != 1 {
		t.Fatalf("%d entries, want 1", len(msgs))
	}
	got := msgs[0].Values
	sig, _ := delivery.Sign(secret, "evt_s", now.Unix(), body)
	if got["body"] != string(body) || got["webhook-id"] != "evt_s" || got["webhook-timestamp"] != "1700000000" ||
		got["webhook-signature"] != sig || got["content-type"] != "application/json" {
		t.Fatalf("entry %v, want the body signed as over HTTP", got)
	}
}

// echoingRedis is a service on loopback that speaks RESP and answers every
// command with an error under code that quotes the command's arguments,
// as a Redis answers a command it does not know: a password sent with
// AUTH comes back in the answer.
func echoingRedis(t *testing.T, code string) string {
	t.Helper()
	return testkit.Serve(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			args, err := readRESPCommand(r)
			if err != nil || len(args) == 0 {
				return
			}
			quoted := make([]string, 0, len(args)-1)
			for _, a := range args[1:] {
				quoted = append(quoted, "'"+a+"'")
			}
			fmt.Fprintf(c, "-%s unknown command '%s', with args beginning with: %s\r\n", code, args[0], strings.Join(quoted, " "))
		}
	})
}

// readRESPCommand reads one command a client sent: an array of bulk
// strings.
func readRESPCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d\r\n", &n); err != nil {
		return nil, err
	}
	args := make([]string, 0, n)
	for range n {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		var size int
		if _, err := fmt.Sscanf(line, "$%d\r\n", &size); err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args = append(args, string(b[:size]))
	}
	return args, nil
}

// An error answer is recorded by its code alone, never its text: a
// service that echoes what it was sent would otherwise put the password
// of the consumer's url, sent with AUTH, into the delivery's record.
func TestRedisErrorThatEchoesAUTHIsRecordedWithoutThePassword(t *testing.T) {
	redisNoLeak(t)
	for code, want := range map[string]string{"ERR": ": answered ERR", "PROXY": ": answered an error"} {
		addr := echoingRedis(t, code)
		pub := openRedisTest(t, "redis://intake-user:hunter2@"+addr+"/0?stream=s", 2*time.Second)
		r := pub.Publish(context.Background(), redisPublication("evt_echo"))
		t.Logf("%s: %s", code, r.Err)
		if r.Outcome != intake.DeliveryRetry || r.Err != "redis redis://***:***@"+addr+"/0?stream=s"+want {
			t.Errorf("%s: %+v, want a retry saying %q", code, r, want)
		}
		if strings.Contains(r.Err, "hunter2") || strings.Contains(r.Err, "intake-user") {
			t.Errorf("%s: the recorded error %q carries the url's credentials", code, r.Err)
		}
	}
}
