package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intakehq/intake/delivery"
)

// natsStream is a JetStream stream of the test's own, capturing
// "<prefix>.>" on the NATS server the tests use, deleted when it ends.
type natsStream struct {
	addr, name, prefix string
	stream             jetstream.Stream
}

// newNATSStream makes the test's stream. Without NATS the test fails in
// CI and is skipped elsewhere.
func newNATSStream(t *testing.T) natsStream {
	t.Helper()
	addr := os.Getenv("INTAKE_TEST_NATS")
	if addr == "" {
		addr = "127.0.0.1:4222"
	}
	nc, err := nats.Connect("nats://"+addr, nats.Timeout(2*time.Second))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NATS with JetStream is not reachable at %s (%v): CI must run it", addr, err)
		}
		t.Skipf("NATS is not reachable at %s: %v", addr, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	suffix := hex.EncodeToString(b)
	ns := natsStream{addr: addr, name: "INTAKE_E2E_" + suffix, prefix: "intake-e2e-" + suffix}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ns.stream, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: ns.name, Subjects: []string{ns.prefix + ".>"},
		Duplicates: 10 * time.Minute, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, ns.name); err != nil {
			t.Errorf("delete stream %s: %v", ns.name, err)
		}
		nc.Close()
	})
	return ns
}

// natsMessage is one message read back from the stream.
type natsMessage struct {
	subject string
	header  nats.Header
	body    []byte
}

// messages reads every message the stream holds.
func (ns natsStream) messages(t *testing.T) []natsMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := ns.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []natsMessage
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := ns.stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("read message %d: %v", seq, err)
		}
		out = append(out, natsMessage{subject: m.Subject, header: m.Header, body: m.Data})
	}
	return out
}

// TestANATSConsumerReceivesSignedEventsAndHoldsThemWhilePaused: on the real
// binary, a consumer whose url is a JetStream subject gets each event as a
// message on the subject of its type, the envelope as body, signed as over
// HTTP, Nats-Msg-Id the event id; paused, its events wait and nothing is
// published; resumed, every one arrives once.
func TestANATSConsumerReceivesSignedEventsAndHoldsThemWhilePaused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	ns := newNATSStream(t)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	id, secret := addBrokerConsumer(t, s, "nats://"+ns.addr+"/"+ns.prefix+".{type}?stream="+ns.name, nil)

	const n = 5
	postGitHubN(t, s, path, "nats-", n)
	eventually(t, 30*time.Second, "every event published", func() bool { return len(ns.messages(t)) == n })
	seen := map[string]bool{}
	for _, m := range ns.messages(t) {
		if m.subject != ns.prefix+".github.issues.opened" {
			t.Errorf("published to %q, want the subject of the event's type", m.subject)
		}
		var env struct{ ID, Type string }
		if err := json.Unmarshal(m.body, &env); err != nil || env.Type != "github.issues.opened" {
			t.Fatalf("body %q is not the event's envelope: %v", m.body, err)
		}
		if m.header.Get("Nats-Msg-Id") != env.ID || m.header.Get("webhook-id") != env.ID {
			t.Errorf("Nats-Msg-Id %q, webhook-id %q, want the event id %q", m.header.Get("Nats-Msg-Id"), m.header.Get("webhook-id"), env.ID)
		}
		unix, _ := strconv.ParseInt(m.header.Get("webhook-timestamp"), 10, 64)
		if want, _ := delivery.Sign(secret, env.ID, unix, m.body); m.header.Get("webhook-signature") != want {
			t.Errorf("webhook-signature %q does not verify (want %q)", m.header.Get("webhook-signature"), want)
		}
		if m.header.Get("content-type") != "application/json" {
			t.Errorf("headers %v lack content-type", m.header)
		}
		seen[env.ID] = true
	}
	for _, e := range s.events(t) {
		if !seen[e.ID] {
			t.Errorf("event %s was not published", e.ID)
		}
	}

	if out := s.cli(t, "consumers", "pause", id, "--json"); !json.Valid([]byte(out)) {
		t.Fatalf("consumers pause answered:\n%s", out)
	}
	postGitHubN(t, s, path, "nats-paused-", n)
	var h health
	eventually(t, 30*time.Second, "the paused consumer's deliveries are held", func() bool {
		s.api(t, "GET", "/api/v1/consumers/"+id+"/health", nil, &h)
		return h.Held == n
	})
	if got := len(ns.messages(t)); got != n {
		t.Fatalf("%d messages published while paused, want the %d from before", got-n, 0)
	}
	s.cli(t, "consumers", "resume", id)
	eventually(t, 30*time.Second, "every held event published on resume", func() bool { return len(ns.messages(t)) == 2*n })
	ids := map[string]bool{}
	for _, m := range ns.messages(t) {
		ids[m.header.Get("Nats-Msg-Id")] = true
	}
	if len(ids) != 2*n {
		t.Errorf("%d distinct event ids published, want %d", len(ids), 2*n)
	}
}

// TestANATSConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack:
// on the real binary, a consumer whose broker refuses connections fails
// its calls and trips its breaker; nothing dies; once the broker is
// reachable the breaker's probe succeeds and every event is published,
// once each.
func TestANATSConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	ns := newNATSStream(t)
	relay := downRelay(t, ns.addr)

	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	id, _ := addBrokerConsumer(t, s, "nats://"+relay.addr+"/"+ns.prefix+".{type}", map[string]any{"breaker_failures": 3})

	const n = 8
	postGitHubN(t, s, path, "nats-down-", n)
	lastError := waitTripped(t, s, id, 30*time.Second)
	wantNothingDeliveredYet(t, s)
	if len(ns.messages(t)) != 0 {
		t.Fatal("a message was published while the broker was down")
	}

	relay.up(t)
	waitEveryEventDelivered(t, s, 90*time.Second)
	msgs := ns.messages(t)
	ids := map[string]int{}
	for _, m := range msgs {
		ids[m.header.Get("Nats-Msg-Id")]++
	}
	wantEachEventOnce(t, s, ids, n)
	t.Logf("last error while the broker was down: %s", lastError)
}
