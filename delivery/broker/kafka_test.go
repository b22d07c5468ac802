package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
)

// No Kafka server can be installed here: the tests start franz-go's kfake,
// an in-process cluster speaking the Kafka protocol, and consume back with
// franz-go's consumer. It is never skipped.

func startKafka(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func kafkaTopicName(t *testing.T) string {
	return fmt.Sprintf("intake-test-%d", time.Now().UnixNano())
}

func openKafkaURL(t *testing.T, raw string, dial delivery.Dialer, timeout time.Duration) delivery.Publisher {
	t.Helper()
	return openTestPublisher(t, raw, dial, timeout)
}

// consumeKafka reads n records of topic from the start.
func consumeKafka(t *testing.T, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(out), n, topic, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

func recordHeaders(r *kgo.Record) []string {
	var out []string
	for _, h := range r.Headers {
		out = append(out, h.Key+"="+string(h.Value))
	}
	return out
}

func TestKafkaPublishesBodyHeadersAndKeyAckedByTheCluster(t *testing.T) {
	topic := kafkaTopicName(t)
	c := startKafka(t, kfake.NumBrokers(3), kfake.SeedTopics(1, topic))
	raw := "kafka://" + strings.Join(c.ListenAddrs(), ",") + "/" + topic
	p := openKafkaURL(t, raw, nil, 5*time.Second)

	keyed := testPublication("evt_1", "order.created", "")
	keyed.OrderKey = "customer-7"
	plain := testPublication("evt_2", "order.created", "")
	for _, pub := range []delivery.Publication{keyed, plain, keyed} { // the last: a republish
		r := p.Publish(context.Background(), pub)
		if r.Outcome != intake.DeliveryHandled || r.Err != "" || r.Latency <= 0 {
			t.Fatalf("publish %s: %+v", pub.ID, r)
		}
	}

	recs := consumeKafka(t, c.ListenAddrs(), topic, 3)
	for i, pub := range []delivery.Publication{keyed, plain, keyed} {
		r := recs[i]
		if !bytes.Equal(r.Value, pub.Body) {
			t.Errorf("record %d value %q, want %q", i, r.Value, pub.Body)
		}
		if string(r.Key) != pub.OrderKey || (pub.OrderKey == "" && r.Key != nil) {
			t.Errorf("record %d key %q, want %q", i, r.Key, pub.OrderKey)
		}
		got := strings.Join(recordHeaders(r), "\n")
		if w := strings.Join(headerLines(pub.Header), "\n"); got != w {
			t.Errorf("record %d headers\n%s\nwant\n%s", i, got, w)
		}
	}
	// A republish carries the same dedup id: the consumer drops it.
	if first, again := recordHeaders(recs[0])[2], recordHeaders(recs[2])[2]; first != again || first != "webhook-id=evt_1" {
		t.Errorf("republished record's %s, first %s", again, first)
	}
}

func TestKafkaWebhookIDIsTheEventIDWhenTheCallHasNone(t *testing.T) {
	got := kafkaHeaders(delivery.Publication{ID: "evt_9"})
	if len(got) != 1 || got[0].Key != "webhook-id" || string(got[0].Value) != "evt_9" {
		t.Fatalf("headers %v", got)
	}
}

func TestKafkaOrderingKeyKeepsOnePartitionInOrder(t *testing.T) {
	topic := kafkaTopicName(t)
	c := startKafka(t, kfake.NumBrokers(1), kfake.SeedTopics(8, topic))
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/"+topic, nil, 5*time.Second)
	for i := range 20 {
		pub := testPublication(fmt.Sprintf("evt_%02d", i), "order.created", "")
		pub.OrderKey = "customer-7"
		if r := p.Publish(context.Background(), pub); r.Outcome != intake.DeliveryHandled {
			t.Fatalf("publish %d: %+v", i, r)
		}
	}
	recs := consumeKafka(t, c.ListenAddrs(), topic, 20)
	for i, r := range recs {
		if r.Partition != recs[0].Partition || string(r.Key) != "customer-7" {
			t.Fatalf("record %d in partition %d key %q; the first in %d", i, r.Partition, r.Key, recs[0].Partition)
		}
		if want := fmt.Sprintf("evt_%02d", i); !bytes.Contains(r.Value, []byte(want)) {
			t.Fatalf("record %d is %q, want %s: out of order", i, r.Value, want)
		}
	}
}

func TestKafkaTopicExpandsTheEventType(t *testing.T) {
	c := startKafka(t, kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/intake.{type}", nil, 5*time.Second)
	pub := testPublication("evt_1", "order.created", "")
	if r := p.Publish(context.Background(), pub); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish: %+v", r)
	}
	recs := consumeKafka(t, c.ListenAddrs(), "intake.order.created", 1)
	if !bytes.Equal(recs[0].Value, pub.Body) {
		t.Fatalf("value %q", recs[0].Value)
	}

	pub.Type = "orders/created"
	r := p.Publish(context.Background(), pub)
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, `kafka topic "intake.orders/created" (from "intake.{type}") has '/'`) {
		t.Fatalf("an event type that makes no topic name: %+v", r)
	}
}

func TestKafkaUnknownTopicIsARetrySayingTheTopicDoesNotExist(t *testing.T) {
	c := startKafka(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "other"))
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/missing-topic", nil, 3*time.Second)
	start := time.Now()
	r := p.Publish(context.Background(), testPublication("evt_1", "order.created", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, `topic "missing-topic" does not exist`) {
		t.Fatalf("publish to a missing topic: %+v", r)
	}
	if took := time.Since(start); took > 3*time.Second+time.Second {
		t.Fatalf("took %s", took)
	}

	// Once the topic is made, the next publish reaches it.
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "missing-topic", 1, 1
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(context.Background(), admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %+v", err, resp)
	}
	if r := p.Publish(context.Background(), testPublication("evt_1", "order.created", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish once the topic exists: %+v", r)
	}
}

func TestKafkaBrokerWhereNothingListensIsARetryWithTheConnectionError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := openKafkaURL(t, "kafka://"+addr+"/events", nil, time.Second)
	start := time.Now()
	r := p.Publish(context.Background(), testPublication("evt_1", "order.created", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "did not acknowledge") ||
		!strings.Contains(r.Err, "connection refused") || !strings.Contains(r.Err, addr) {
		t.Fatalf("publish to nothing: %+v", r)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s, timeout 1s", took)
	}
}

func TestKafkaBrokerThatAcceptsAndNeverAnswersEndsAtTheTimeout(t *testing.T) {
	p := openKafkaURL(t, "kafka://"+silentBroker(t)+"/events", nil, 500*time.Millisecond)
	start := time.Now()
	r := p.Publish(context.Background(), testPublication("evt_1", "order.created", ""))
	took := time.Since(start)
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "did not acknowledge the record to topic \"events\" within 500ms") {
		t.Fatalf("publish to a silent broker: %+v", r)
	}
	if took < 500*time.Millisecond || took > 1500*time.Millisecond {
		t.Fatalf("took %s, timeout 500ms", took)
	}
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on a silent broker")
	}
}

func TestKafkaPublishDoesNotHangOnceTheClusterIsClosed(t *testing.T) {
	topic := kafkaTopicName(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/"+topic, nil, time.Second)
	if r := p.Publish(context.Background(), testPublication("evt_1", "order.created", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish: %+v", r)
	}
	c.Close()
	for i := range 2 {
		start := time.Now()
		r := p.Publish(context.Background(), testPublication("evt_2", "order.created", ""))
		if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "did not acknowledge") {
			t.Fatalf("publish %d to a closed cluster: %+v", i, r)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("publish %d took %s, timeout 1s", i, took)
		}
	}
}

func TestKafkaConcurrentPublishesAreEachAcked(t *testing.T) {
	topic := kafkaTopicName(t)
	c := startKafka(t, kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/"+topic, nil, 5*time.Second)
	const n = 64
	var wg sync.WaitGroup
	results := make([]delivery.Result, n)
	for i := range n {
		wg.Go(func() {
			pub := testPublication(fmt.Sprintf("evt_%d", i), "order.created", "")
			pub.OrderKey = fmt.Sprintf("key-%d", i%5)
			results[i] = p.Publish(context.Background(), pub)
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.Outcome != intake.DeliveryHandled {
			t.Fatalf("publish %d: %+v", i, r)
		}
	}
	seen := map[string]bool{}
	for _, r := range consumeKafka(t, c.ListenAddrs(), topic, n) {
		for _, h := range r.Headers {
			if h.Key == "webhook-id" {
				seen[string(h.Value)] = true
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct ids consumed, want %d", len(seen), n)
	}
}

func TestKafkaSASLLogsInAndAWrongPasswordIsARetryThatHidesIt(t *testing.T) {
	topic := kafkaTopicName(t)
	c := startKafka(t, kfake.NumBrokers(1), kfake.SeedTopics(1, topic), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "intake", "s3cret-pass"))
	addr := c.ListenAddrs()[0]
	p := openKafkaURL(t, "kafka://intake:s3cret-pass@"+addr+"/"+topic+"?sasl=scram-sha-512", nil, 5*time.Second)
	if r := p.Publish(context.Background(), testPublication("evt_1", "order.created", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish with the right password: %+v", r)
	}

	wrong := openKafkaURL(t, "kafka://intake:wrong-pass@"+addr+"/"+topic+"?sasl=scram-sha-512", nil, time.Second)
	r := wrong.Publish(context.Background(), testPublication("evt_2", "order.created", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "last connection error") || strings.Contains(r.Err, "wrong-pass") {
		t.Fatalf("publish with a wrong password: %+v", r)
	}
}

func TestKafkaTLSIsSpokenWhenAsked(t *testing.T) {
	c := startKafka(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "events"), kfake.TLS(selfSigned(t)))
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/events?tls=1", nil, time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "order.created", ""))
	// The cluster's certificate is its own: the handshake happened and
	// the certificate is what was refused.
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "TLS certificate not trusted") {
		t.Fatalf("publish over tls to a self-signed cluster: %+v", r)
	}
}

func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafka"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func TestKafkaConnectionsGoThroughTheAddressPolicy(t *testing.T) {
	c := startKafka(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	deny := delivery.Policy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/events", deny.Dialer(time.Second), time.Second)
	r := p.Publish(context.Background(), testPublication("evt_1", "order.created", ""))
	if r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "last connection error") || !strings.Contains(r.Err, "refused by the consumer address policy") {
		t.Fatalf("publish to a denied address: %+v", r)
	}
}

func TestKafkaCloseLeavesNothingRunning(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u, _ := url.Parse("kafka://" + c.ListenAddrs()[0] + "/events")
	p, err := openKafka(u, delivery.DefaultPolicy().Dialer(time.Second), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Publish(context.Background(), testPublication("evt_1", "order.created", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish: %+v", r)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if r := p.Publish(context.Background(), testPublication("evt_2", "order.created", "")); r.Outcome != intake.DeliveryRetry || !strings.Contains(r.Err, "closed") {
		t.Fatalf("publish after Close: %+v", r)
	}
}

func TestKafkaCheckRefusesURLsThatCannotWork(t *testing.T) {
	bad := map[string]string{
		"kafka://127.0.0.1:9092":                               "names no topic",
		"kafka://127.0.0.1:9092/":                              "names no topic",
		"kafka://127.0.0.1:9092/a/b":                           `has '/'`,
		"kafka://127.0.0.1:9092/has%20space":                   `has ' '`,
		"kafka://127.0.0.1:9092/..":                            `is ".."`,
		"kafka://127.0.0.1:9092/" + strings.Repeat("t", 250):   "longer than 249",
		"kafka://127.0.0.1:9092/events.{id}":                   "placeholder other than {type}",
		"kafka://,127.0.0.1:9092/events":                       "empty broker address",
		"kafka://127.0.0.1:0/events":                           "port is not a number from 1 to 65535",
		"kafka://127.0.0.1:9092/events?sasl=gssapi":            "sasl=gssapi",
		"kafka://u:p@127.0.0.1:9092/events?sasl=kerberos":      "write plain, scram-sha-256 or scram-sha-512",
		"kafka://127.0.0.1:9092/events?sasl=plain":             "has no user:pass@",
		"kafka://user@127.0.0.1:9092/events":                   "without both a user and a password",
		"kafka://127.0.0.1:9092/events?tls=yes":                "tls=yes",
		"kafka://127.0.0.1:9092/events?topic=x":                `unknown parameter "topic"`,
		"kafka://127.0.0.1:9092/events?tls=1&tls=0":            "gives tls 2 times",
		"kafka://127.0.0.1:9092/events#frag":                   "has a fragment",
		"kafka://u:hunter2@127.0.0.1:9092/?sasl=scram-sha-256": "names no topic",
	}
	good := []string{
		"kafka://127.0.0.1:9092/intake-events",
		"kafka://kafka-1.internal:9092,kafka-2.internal:9093/intake.events_v1",
		"kafka://kafka.internal/intake.{type}",
		"kafka://[::1]:9092/intake-{type}-{key}",
		"kafka://user:pa%40ss@kafka.internal:9092/events?sasl=scram-sha-512&tls=1",
		"kafka://user:pass@kafka.internal:9092/events?sasl=PLAIN",
		"kafka://user:pass@kafka.internal:9092/events",
		"kafka://kafka.internal:9092/events?tls=0",
		"kafka://kafka.internal:9092/" + strings.Repeat("t", 249),
	}
	wantChecked(t, bad, good, "hunter2")
	if !All().Names("kafka://127.0.0.1:9092/events") || !strings.Contains(strings.Join(All().Schemes(), " "), "kafka") {
		t.Fatal("kafka is not a known scheme")
	}
}

func TestKafkaPublishesAgainOnceTheBrokerIsBack(t *testing.T) {
	topic := kafkaTopicName(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := startKafka(t, kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, topic))
	p := openKafkaURL(t, "kafka://"+c.ListenAddrs()[0]+"/"+topic, nil, time.Second)
	if r := p.Publish(context.Background(), testPublication("evt_1", "order.created", "")); r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish: %+v", r)
	}
	c.Close()
	if r := p.Publish(context.Background(), testPublication("evt_2", "order.created", "")); r.Outcome != intake.DeliveryRetry {
		t.Fatalf("publish while the broker is down: %+v", r)
	}

	back := startKafka(t, kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, topic))
	var r delivery.Result
	// The rebuilt cluster's topic has a new id: the first publish learns
	// that, the retry after it is acked.
	for range 2 {
		if r = p.Publish(context.Background(), testPublication("evt_2", "order.created", "")); r.Outcome == intake.DeliveryHandled {
			break
		}
	}
	if r.Outcome != intake.DeliveryHandled {
		t.Fatalf("publish once the broker is back: %+v", r)
	}
	recs := consumeKafka(t, back.ListenAddrs(), topic, 1)
	if got := recordHeaders(recs[len(recs)-1]); !strings.Contains(strings.Join(got, " "), "webhook-id=evt_2") {
		t.Fatalf("headers %v", got)
	}
}

func TestKafkaDeliverPublishesSignedOverTheConsumersKeptClient(t *testing.T) {
	topic := kafkaTopicName(t)
	c := startKafka(t, kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	s := delivery.NewSender(delivery.Options{Policy: delivery.DefaultPolicy(), Timeout: 5 * time.Second, Brokers: All()})
	defer s.Close()
	secret := delivery.NewSecret()
	now := time.Unix(1700000000, 0)
	raw := "kafka://" + c.ListenAddrs()[0] + "/" + topic
	body := []byte(`{"id":"evt_1"}`)
	for range 2 {
		r := s.Deliver(context.Background(), "con_1", raw, []string{secret}, delivery.Publication{ID: "evt_1", Type: "t", Body: body, OrderKey: "k"}, now)
		if r.Outcome != intake.DeliveryHandled {
			t.Fatalf("deliver: %+v", r)
		}
	}
	recs := consumeKafka(t, c.ListenAddrs(), topic, 2)
	want, err := delivery.Sign(secret, "evt_1", now.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(recordHeaders(recs[1]), " ")
	for _, h := range []string{"content-type=application/json", "webhook-id=evt_1", "webhook-timestamp=1700000000", "webhook-signature=" + want} {
		if !strings.Contains(got, h) {
			t.Errorf("headers %s lack %s", got, h)
		}
	}
	if !bytes.Equal(recs[1].Value, body) || string(recs[1].Key) != "k" {
		t.Errorf("record %q key %q", recs[1].Value, recs[1].Key)
	}
}
