package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/intakehq/intake/delivery"
)

// sink is where the measured consumer's deliveries arrive: the bench's own
// HTTP consumer, or a reader of the broker intake publishes to. Either
// records each arrival in the tracker, at the time the bench got it.
type sink struct {
	kind  string // "http", "nats" or "kafka", "kafka (kfake, in this process)"
	url   string // the consumer url intake is given
	close func()
}

// kfakeHost is the kafka url host that asks the bench to run franz-go's
// in-process fake cluster (kfake) and give intake its address.
const kfakeHost = "kfake"

// checkConsumerURL says what is wrong with a --consumer url before any
// server is started.
func checkConsumerURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--consumer: %v", err)
	}
	switch u.Scheme {
	case "nats":
		if strings.TrimPrefix(u.Path, "/") == "" {
			return errors.New("--consumer: a nats url needs a subject as its path, as in nats://127.0.0.1:4222/bench.{type}")
		}
		for k := range u.Query() {
			if k != "stream" {
				return fmt.Errorf("--consumer: the bench reads a nats url's stream only, not %q", k)
			}
		}
	case "kafka":
		if strings.TrimPrefix(u.Path, "/") == "" {
			return errors.New("--consumer: a kafka url needs a topic as its path, as in kafka://kfake/bench.{type}")
		}
		if u.RawQuery != "" || u.User != nil {
			return errors.New("--consumer: the bench reads Kafka in plaintext without SASL: no query or credentials in the url")
		}
	default:
		return fmt.Errorf("--consumer %q: want a nats:// or kafka:// url (none: the bench's HTTP consumer)", raw)
	}
	return nil
}

// startSink starts what receives the measured consumer's deliveries for
// raw ("" for HTTP on addr) and the bench's event type.
func startSink(ctx context.Context, raw, addr, eventType string, track *tracker) (*sink, error) {
	if raw == "" {
		c, err := startConsumer(addr, track)
		if err != nil {
			return nil, err
		}
		return &sink{kind: "http", url: c.url, close: c.close}, nil
	}
	if err := checkConsumerURL(raw); err != nil {
		return nil, err
	}
	u, _ := url.Parse(raw)
	// The subject or topic intake publishes the bench's events to.
	name := delivery.Expand(strings.TrimPrefix(u.Path, "/"), delivery.Publication{Type: eventType})
	if u.Scheme == "nats" {
		return startNATSSink(ctx, raw, u, name, track)
	}
	return startKafkaSink(ctx, raw, u, name, track)
}

// arrived records the envelope in body as delivered at.
func arrived(track *tracker, body []byte, at time.Time) {
	var envelope struct {
		ProviderEventID string `json:"provider_event_id"`
	}
	if json.Unmarshal(body, &envelope) == nil {
		track.got(envelope.ProviderEventID, at)
	}
}

// startNATSSink makes sure a JetStream stream captures subject (the one
// named by ?stream=, made when missing and then deleted at the end) and
// reads every new message of it with an ordered consumer.
func startNATSSink(ctx context.Context, raw string, u *url.URL, subject string, track *tracker) (*sink, error) {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "4222")
	}
	conn := url.URL{Scheme: "nats", User: u.User, Host: host}
	nc, err := nats.Connect(conn.String(), nats.Name("intake-bench"))
	if err != nil {
		return nil, fmt.Errorf("NATS at %s: %w", host, err)
	}
	fail := func(err error) (*sink, error) { nc.Close(); return nil, err }
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	name := u.Query().Get("stream")
	if name == "" {
		name = "INTAKE_BENCH"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	made := true
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Duplicates: 2 * time.Minute})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		made = false
		stream, err = js.Stream(ctx, name)
	}
	if err != nil {
		return fail(fmt.Errorf("JetStream stream %s for %s: %w", name, subject, err))
	}
	drop := func() {
		if made {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			js.DeleteStream(ctx, name)
		}
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		drop()
		return fail(fmt.Errorf("a consumer of stream %s: %w", name, err))
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { arrived(track, m.Data(), time.Now()) })
	if err != nil {
		drop()
		return fail(fmt.Errorf("consuming stream %s: %w", name, err))
	}
	return &sink{kind: "nats", url: raw, close: func() { cc.Stop(); drop(); nc.Close() }}, nil
}

// startKafkaSink reads topic from its start with a kgo consumer, after
// making it (one partition) if the cluster lacks it. For the host "kfake"
// it first starts franz-go's fake cluster in this process and gives intake
// its address instead.
func startKafkaSink(ctx context.Context, raw string, u *url.URL, topic string, track *tracker) (*sink, error) {
	kind, stopCluster := "kafka", func() {}
	var seeds []string
	if u.Hostname() == kfakeHost {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
		if err != nil {
			return nil, fmt.Errorf("starting kfake: %w", err)
		}
		kind, stopCluster, seeds = "kafka (kfake, in this process)", c.Close, c.ListenAddrs()
		// Given as written (u.String() would escape the braces of {type}).
		raw = strings.Replace(raw, "//"+u.Host, "//"+strings.Join(seeds, ","), 1)
	} else {
		for h := range strings.SplitSeq(u.Host, ",") {
			if _, _, err := net.SplitHostPort(h); err != nil {
				h = net.JoinHostPort(h, "9092")
			}
			seeds = append(seeds, h)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		stopCluster()
		return nil, err
	}
	if err := createTopic(ctx, cl, topic); err != nil {
		cl.Close()
		stopCluster()
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			fs := cl.PollFetches(pctx)
			at := time.Now()
			fs.EachRecord(func(r *kgo.Record) { arrived(track, r.Value, at) })
		}
	}()
	return &sink{kind: kind, url: raw, close: func() { cancel(); <-done; cl.Close(); stopCluster() }}, nil
}

// createTopic makes topic with one partition, unless it is there.
func createTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, 1, -1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 10_000
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", topic, err)
		}
	}
	return nil
}
