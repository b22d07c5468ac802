package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/redact"
)

// A kafka url names the brokers to bootstrap from and the topic:
//
//	kafka://[user:pass@]host:9092[,host2:9092]/<topic>[?sasl=plain|scram-sha-256|scram-sha-512][&tls=1]
//
// The topic may hold "{type}" and "{key}" (delivery.Expand). Each event is one
// record produced by an idempotent producer and acknowledged by every
// in-sync replica: its value the body, its key the ordering key, its
// headers the call's headers (webhook-id is the dedup id).

var kafkaKind = delivery.Kind{Check: checkKafka, Open: openKafka}

// kafkaURL is a checked kafka url.
type kafkaURL struct {
	seeds []string // host:port
	topic string   // a template for delivery.Expand
	mech  sasl.Mechanism
	tls   bool
}

// maxKafkaTopic is the longest topic name Kafka accepts.
const maxKafkaTopic = 249

func checkKafka(u *url.URL) error {
	_, err := parseKafka(u)
	return err
}

func parseKafka(u *url.URL) (kafkaURL, error) {
	bad := func(format string, a ...any) (kafkaURL, error) {
		return kafkaURL{}, intake.Errorf(intake.EINVALID, "kafka url %s %s", redact.URL(u.String()), fmt.Sprintf(format, a...))
	}
	var k kafkaURL
	if u.Opaque != "" || u.Host == "" {
		return bad("names no broker: write it as kafka://host:9092/<topic>")
	}
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return bad("has an empty broker address in %q", u.Host)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, "9092"
			if strings.Contains(strings.Trim(h, "[]"), ":") && !strings.HasPrefix(h, "[") {
				return bad("has a broker address %q that is not host:port", h)
			}
			host = strings.Trim(host, "[]")
		}
		if host == "" {
			return bad("has a broker address %q without a host", h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad("has a broker address %q whose port is not a number from 1 to 65535", h)
		}
		k.seeds = append(k.seeds, net.JoinHostPort(host, port))
	}
	k.topic = strings.TrimPrefix(u.Path, "/")
	if k.topic == "" {
		return bad("names no topic: write it as the path, kafka://host:9092/<topic>")
	}
	probe := strings.NewReplacer("{type}", "t", "{key}", "k").Replace(k.topic)
	if strings.ContainsAny(probe, "{}") {
		return bad("has a topic %q with a placeholder other than {type} and {key}", k.topic)
	}
	if err := validKafkaTopic(probe); err != nil {
		return bad("has a topic %q that %v", k.topic, err)
	}
	if u.Fragment != "" {
		return bad("has a fragment (#%s); a topic is written as the path", u.Fragment)
	}

	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("has a query that cannot be read: %v", err)
	}
	for key, vs := range q {
		if len(vs) != 1 {
			return bad("gives %s %d times", key, len(vs))
		}
		switch key {
		case "sasl", "tls":
		default:
			return bad("has an unknown parameter %q (known: sasl, tls)", key)
		}
	}
	switch strings.ToLower(q.Get("tls")) {
	case "", "0", "false":
	case "1", "true":
		k.tls = true
	default:
		return bad("has tls=%s: write tls=1 or leave it out", q.Get("tls"))
	}
	user, pass, hasPass := "", "", false
	if u.User != nil {
		user = u.User.Username()
		pass, hasPass = u.User.Password()
		if user == "" || !hasPass {
			return bad("has credentials without both a user and a password (user:pass@)")
		}
	}
	mech := strings.ToLower(q.Get("sasl"))
	if mech != "" && u.User == nil {
		return bad("asks for sasl=%s but has no user:pass@", q.Get("sasl"))
	}
	if mech == "" && u.User != nil {
		mech = "plain"
	}
	switch mech {
	case "":
	case "plain":
		k.mech = plain.Auth{User: user, Pass: pass}.AsMechanism()
	case "scram-sha-256":
		k.mech = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "scram-sha-512":
		k.mech = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	default:
		return bad("has sasl=%s: write plain, scram-sha-256 or scram-sha-512", q.Get("sasl"))
	}
	return k, nil
}

// validKafkaTopic says why name is not a topic Kafka accepts, or nil.
func validKafkaTopic(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case name == "." || name == "..":
		return fmt.Errorf("is %q, which Kafka refuses", name)
	case len(name) > maxKafkaTopic:
		return fmt.Errorf("is longer than %d characters", maxKafkaTopic)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("has %q: a topic is letters, digits, '.', '_' and '-'", r)
		}
	}
	return nil
}

// kafkaPublisher produces to one kafka url through one client.
type kafkaPublisher struct {
	cl      *kgo.Client
	topic   string
	brokers string // for errors: the seeds, never the credentials
	timeout time.Duration
	last    atomic.Pointer[string] // the last failed connection, "" once one succeeds
}

func openKafka(u *url.URL, dial delivery.Dialer, timeout time.Duration) (delivery.Publisher, error) {
	k, err := parseKafka(u)
	if err != nil {
		return nil, err
	}
	p := &kafkaPublisher{topic: k.topic, brokers: strings.Join(k.seeds, ","), timeout: timeout}
	connect := dial
	if k.tls {
		connect = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(c, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
			}
			return tc, nil
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(k.seeds...),
		kgo.Dialer(connect),
		kgo.ClientID("intake"),
		kgo.WithHooks(connectHook{p}),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		// Publish gives up at timeout; these (at the least the client
		// accepts) let the client give up on the record too.
		kgo.RecordDeliveryTimeout(max(timeout, time.Second)),
		kgo.ProduceRequestTimeout(max(timeout, 100*time.Millisecond)),
		kgo.RequestTimeoutOverhead(max(timeout, 100*time.Millisecond)),
		kgo.RetryTimeout(max(timeout, 100*time.Millisecond)),
		// A missing topic is asked about again soon, so that it is
		// reported as missing within the timeout.
		kgo.MetadataMinAge(max(min(timeout/4, time.Second), 10*time.Millisecond)),
		// The brokers decide (auto.create.topics.enable): a topic with
		// {type} may name one per event type.
		kgo.AllowAutoTopicCreation(),
	}
	if k.mech != nil {
		opts = append(opts, kgo.SASL(k.mech))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, intake.Errorf(intake.EINVALID, "kafka url %s: %v", redact.URL(u.String()), err)
	}
	p.cl = cl
	return p, nil
}

// connectHook keeps why the last connection to a broker failed, so a
// produce that times out can say so.
type connectHook struct{ p *kafkaPublisher }

func (h connectHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.p.last.Store(nil)
		return
	}
	why := fmt.Sprintf("broker %s: %s", net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))), kafkaFailure(err))
	h.p.last.Store(&why)
}

func (p *kafkaPublisher) Publish(ctx context.Context, pub delivery.Publication) delivery.Result {
	start := time.Now()
	topic := delivery.Expand(p.topic, pub)
	if err := validKafkaTopic(topic); err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Err: fmt.Sprintf("kafka topic %q (from %q) %v", topic, p.topic, err)}
	}
	rec := &kgo.Record{Topic: topic, Value: pub.Body, Headers: kafkaHeaders(pub)}
	if pub.OrderKey != "" {
		rec.Key = []byte(pub.OrderKey)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	acked := make(chan error, 1) // the promise may come after Publish returned
	p.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) { acked <- err })
	var err error
	select {
	case err = <-acked:
	case <-ctx.Done():
		err = ctx.Err()
	}
	took := time.Since(start)
	if err == nil {
		return delivery.Result{Outcome: intake.DeliveryHandled, Latency: took}
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		// The client keeps what it learnt of the topic, its id among it,
		// and fails every later record to it: forgotten, the next publish
		// looks the topic up again (one created since, or recreated under
		// a new id, as by a cluster rebuilt while it was down).
		p.cl.PurgeTopicsFromClient(topic)
	}
	return delivery.Result{Outcome: intake.DeliveryRetry, Latency: took, Err: p.describe(topic, err)}
}

// describe says why a produce to topic was not acknowledged.
func (p *kafkaPublisher) describe(topic string, err error) string {
	var why string
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		why = fmt.Sprintf("topic %q does not exist on kafka %s (and the brokers do not create topics)", topic, p.brokers)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kgo.ErrRecordTimeout):
		why = fmt.Sprintf("kafka %s did not acknowledge the record to topic %q within %s", p.brokers, topic, p.timeout)
	case errors.Is(err, context.Canceled):
		why = fmt.Sprintf("publish to kafka %s topic %q canceled", p.brokers, topic)
	case errors.Is(err, kgo.ErrClientClosed):
		return fmt.Sprintf("publisher to kafka %s is closed", p.brokers)
	default:
		why = fmt.Sprintf("kafka %s refused the record to topic %q: %s", p.brokers, topic, kafkaFailure(err))
	}
	if last := p.last.Load(); last != nil {
		why += " (last connection error: " + *last + ")"
	}
	return why
}

// kafkaFailure names what failed from a fixed set: Kafka's error code by
// its name, else the connection's failure. Never the error's text, which
// may carry what the other side sent (an answer's first 4 bytes read as
// its size, a broker's own message).
func kafkaFailure(err error) string {
	var (
		code *kerr.Error
		eof  *kgo.ErrFirstReadEOF
	)
	switch {
	case errors.As(err, &code):
		return "answered " + code.Message
	case errors.As(err, &eof):
		return "the broker closed the connection before answering (does it need TLS or SASL?)"
	}
	return delivery.BrokerFailure(err)
}

// kafkaHeaders are the record's headers: every header of the call, named
// in lower case (webhook-id, webhook-timestamp, webhook-signature,
// traceparent, content-type, a transform's), in name order, with
// webhook-id the event id when the call has none.
func kafkaHeaders(pub delivery.Publication) []kgo.RecordHeader {
	names := make([]string, 0, len(pub.Header)+1)
	for name := range pub.Header {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	out := make([]kgo.RecordHeader, 0, len(names)+1)
	for _, name := range names {
		for _, v := range pub.Header[name] {
			out = append(out, kgo.RecordHeader{Key: strings.ToLower(name), Value: []byte(v)})
		}
	}
	if pub.ID != "" && http.Header(pub.Header).Get("webhook-id") == "" {
		out = append(out, kgo.RecordHeader{Key: "webhook-id", Value: []byte(pub.ID)})
	}
	return out
}

// Close fails what is still buffered and closes every connection.
func (p *kafkaPublisher) Close() error {
	p.cl.Close()
	return nil
}
