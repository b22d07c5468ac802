package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/intakehq/intake/internal/faults"
)

// brokerSink is a broker destination whose messages a test reads into a
// sink: it returns the consumer url intake publishes to.
type brokerSink func(t *testing.T, sink *faults.Sink) string

// natsSink publishes to a JetStream stream of the test's own, read back
// as it fills. Nats-Msg-Id is the event id, so JetStream stores a
// republish within its duplicate window once: the sink sees none.
func natsSink(t *testing.T, sink *faults.Sink) string {
	ns := newNATSStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ns.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) { sink.Record(m.Data(), m.Headers().Get("webhook-id")) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return "nats://" + ns.addr + "/" + ns.prefix + ".{type}?stream=" + ns.name
}

// amqpSink publishes to a RabbitMQ queue of the test's own, read as
// messages arrive. RabbitMQ keeps every message it confirms or not, so a
// publish made again after its confirm was lost arrives again, under the
// same message_id.
func amqpSink(t *testing.T, sink *faults.Sink) string {
	b := newAMQPBroker(t)
	q := b.consume(t, "", "", func(d amqp.Delivery) { sink.Record(d.Body, d.MessageId) })
	return b.consumerURL("", "queue="+q)
}

// TestNetworkFaultsBetweenIntakeAndABrokerLoseNothing runs network faults
// between intake and a broker destination (NATS JetStream, RabbitMQ), on
// the store the suite runs on: ingress is untouched, and every
// acknowledged webhook reaches the broker once the fault is removed, as
// one event (a publish made again after its acknowledgement was lost
// carries the same event id); no warning is logged more than once.
func TestNetworkFaultsBetweenIntakeAndABrokerLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	store := "sqlite"
	if onPostgres() {
		store = "postgres"
	}
	for _, b := range []struct {
		link string
		sink brokerSink
	}{{"nats link", natsSink}, {"rabbitmq link", amqpSink}} {
		for _, name := range linkFaults {
			f, ok := faults.Find(name)
			if !ok {
				t.Fatalf("no fault %q", name)
			}
			t.Run(b.link+"/"+f.Name, func(t *testing.T) {
				t.Parallel()
				sink := &faults.Sink{Key: deliveryOf}
				consumerURL, proxy := faults.ProxiedURL(t, b.sink(t, sink))
				s := start(t, t.TempDir(), "--delivery-timeout", "2s")
				tally := runFault(t, s, f, proxy, sink, nil, consumerURL)
				checkTally(t, tally, b.link, store)
				// What the sink cannot see where the broker dedupes by
				// event id: the publishes intake made again.
				t.Logf("%v publishes failed and were made again", value(s.scrape(t), "intake_deliveries_total", "outcome", "retry"))
				s.kill()
				checkOutageLogged(t, s)
			})
		}
	}
}
