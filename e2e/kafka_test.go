package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/intakehq/intake/delivery"
)

// No Kafka server runs here: each test starts franz-go's kfake, a cluster
// in the test process speaking the Kafka protocol on 127.0.0.1, and gives
// its address to the binary. It needs nothing outside the test, so it is
// never skipped.

// kafkaCluster is a kfake cluster of the test's own, with the user intake
// publishes as (when it has SASL), closed when the test ends.
type kafkaCluster struct {
	*kfake.Cluster
	addr       string // the broker's host:port
	prefix     string // the test's topics begin with it
	user, pass string // "" without SASL
}

// startKafkaCluster starts a one-broker cluster that creates a topic when
// it is first produced to, on port (0: any free port).
func startKafkaCluster(t *testing.T, port int, opts ...kfake.Opt) *kafkaCluster {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	k := &kafkaCluster{prefix: "intake-e2e-" + hex.EncodeToString(b)}
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3),
		kfake.Ports(port)}, opts...)
	var err error
	if port == 0 {
		k.Cluster, err = kfake.NewCluster(opts...)
	} else {
		// The port was free a moment ago; another process may hold it briefly.
		eventually(t, 5*time.Second, "kafka listening on its port", func() bool {
			k.Cluster, err = kfake.NewCluster(opts...)
			return err == nil
		})
	}
	if err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	t.Cleanup(k.Close)
	k.addr = k.ListenAddrs()[0]
	return k
}

// startKafkaWithSASL starts a cluster that takes only SASL/PLAIN clients.
func startKafkaWithSASL(t *testing.T) *kafkaCluster {
	t.Helper()
	const user, pass = "intake", "p4ss-w0rd"
	k := startKafkaCluster(t, 0, kfake.EnableSASL(), kfake.Superuser("PLAIN", user, pass))
	k.user, k.pass = user, pass
	return k
}

// held is how many records the cluster holds in topic.
func (k *kafkaCluster) held(topic string) int {
	n := 0
	for _, p := range k.PartitionInfos(topic) {
		n += int(p.HighWatermark - p.LogStartOffset)
	}
	return n
}

// records reads back every record the cluster holds in topic, over the
// Kafka protocol.
func (k *kafkaCluster) records(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	want := k.held(topic)
	if want == 0 {
		return nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(k.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if k.user != "" {
		opts = append(opts, kgo.SASL(plain.Auth{User: k.user, Pass: k.pass}.AsMechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of the %d records of %s: %v", len(out), want, topic, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("read %s: %v", topic, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// header is the record's header name, or "".
func header(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}

// checkSignedRecord checks that r is an event of type typ signed with
// secret as over HTTP, its webhook-id the event id, and returns that id.
func checkSignedRecord(t *testing.T, r *kgo.Record, typ, secret string) string {
	t.Helper()
	var env struct{ ID, Type string }
	if err := json.Unmarshal(r.Value, &env); err != nil || env.Type != typ {
		t.Fatalf("record value %q is not the envelope of a %s event: %v", r.Value, typ, err)
	}
	if header(r, "webhook-id") != env.ID {
		t.Errorf("webhook-id %q, want the event id %q", header(r, "webhook-id"), env.ID)
	}
	unix, _ := strconv.ParseInt(header(r, "webhook-timestamp"), 10, 64)
	if want, _ := delivery.Sign(secret, env.ID, unix, r.Value); header(r, "webhook-signature") != want {
		t.Errorf("webhook-signature %q does not verify (want %q)", header(r, "webhook-signature"), want)
	}
	if header(r, "content-type") != "application/json" {
		t.Errorf("headers %v lack content-type", r.Headers)
	}
	return env.ID
}

// TestAKafkaConsumerReceivesSignedEventsAndHoldsThemWhilePaused: on the
// real binary, a consumer whose url is a Kafka topic, with SASL
// credentials read back as ***, gets each event as a record on the topic
// of its type, the envelope as value, signed as over HTTP, webhook-id the
// event id; `intake consumers test` answers handled and the test event is
// a record too; paused, its events wait and nothing is produced; resumed,
// every one arrives once. A kafka url that names no topic or an unknown
// parameter is refused with 400 and nothing is saved.
func TestAKafkaConsumerReceivesSignedEventsAndHoldsThemWhilePaused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	k := startKafkaWithSASL(t)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	raw := "kafka://" + k.user + ":" + k.pass + "@" + k.addr + "/" + k.prefix + ".{type}"
	id, secret := addBrokerConsumer(t, s, raw, nil)
	topic := k.prefix + ".github.issues.opened"

	var cons struct{ URL string }
	s.api(t, "GET", "/api/v1/consumers/"+id, nil, &cons)
	if strings.Contains(cons.URL, k.pass) || !strings.Contains(cons.URL, "***:***@"+k.addr) {
		t.Errorf("consumer url read back as %q, want the password as ***", cons.URL)
	}

	const n = 5
	postGitHubN(t, s, path, "kafka-", n)
	eventually(t, 30*time.Second, "every event produced", func() bool { return k.held(topic) == n })
	seen := map[string]bool{}
	for _, r := range k.records(t, topic) {
		seen[checkSignedRecord(t, r, "github.issues.opened", secret)] = true
	}
	for _, e := range s.events(t) {
		if !seen[e.ID] {
			t.Errorf("event %s was not produced", e.ID)
		}
	}

	var test struct {
		EventID string `json:"event_id"`
		Outcome string `json:"outcome"`
		Error   string `json:"error"`
	}
	if out := s.cli(t, "consumers", "test", id, "--json"); json.Unmarshal([]byte(out), &test) != nil || test.Outcome != "handled" {
		t.Fatalf("consumers test answered:\n%s", out)
	}
	recs := k.records(t, k.prefix+".intake.test")
	if len(recs) != 1 || checkSignedRecord(t, recs[0], "intake.test", secret) != test.EventID {
		t.Fatalf("%d records on the test event's topic, want its one, event %s", len(recs), test.EventID)
	}

	if out := s.cli(t, "consumers", "pause", id, "--json"); !json.Valid([]byte(out)) {
		t.Fatalf("consumers pause answered:\n%s", out)
	}
	postGitHubN(t, s, path, "kafka-paused-", n)
	var h health
	eventually(t, 30*time.Second, "the paused consumer's deliveries are held", func() bool {
		s.api(t, "GET", "/api/v1/consumers/"+id+"/health", nil, &h)
		return h.Held == n
	})
	if got := k.held(topic); got != n {
		t.Fatalf("%d records produced while paused, want none", got-n)
	}
	s.cli(t, "consumers", "resume", id)
	eventually(t, 30*time.Second, "every held event produced on resume", func() bool { return k.held(topic) == 2*n })
	ids := map[string]bool{}
	for _, r := range k.records(t, topic) {
		ids[header(r, "webhook-id")] = true
	}
	if len(ids) != 2*n {
		t.Errorf("%d distinct event ids produced, want %d", len(ids), 2*n)
	}

	for _, bad := range []string{
		"kafka://" + k.addr,                           // no topic
		"kafka://" + k.addr + "/t?acks=0",             // an unknown parameter
		"kafka://" + k.addr + "/t?sasl=plain",         // sasl without credentials
		"kafka://" + k.addr + "/has%20space",          // a topic Kafka refuses
		"kafka://" + k.addr + "/" + k.prefix + ".{x}", // a placeholder it does not know
	} {
		refuseBrokerConsumer(t, s, bad)
	}
}

// TestAKafkaConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack:
// on the real binary, a consumer whose broker's port refuses connections
// fails its calls and trips its breaker; nothing dies; once a broker
// listens on that port the breaker's probe succeeds and every event is
// produced, once each.
func TestAKafkaConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // the broker is down: connections to its address are refused

	s := start(t, t.TempDir(), "--delivery-timeout", "2s")
	path := setupGitHub(t, s)
	const topic = "intake-e2e-down"
	id, _ := addBrokerConsumer(t, s, "kafka://"+addr+"/"+topic, map[string]any{"breaker_failures": 3})

	const n = 8
	postGitHubN(t, s, path, "kafka-down-", n)
	lastError := waitTripped(t, s, id, 60*time.Second)
	wantNothingDeliveredYet(t, s)

	k := startKafkaCluster(t, port)
	waitEveryEventDelivered(t, s, 90*time.Second)
	recs := k.records(t, topic)
	ids := map[string]int{}
	for _, r := range recs {
		ids[header(r, "webhook-id")]++
	}
	wantEachEventOnce(t, s, ids, n)
	t.Logf("last error while the broker was down: %s", lastError)
}
