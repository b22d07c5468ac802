// Package metrics declares intake's Prometheus metrics in one place, on a
// registry of their own so tests and several servers in one process do not
// collide.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the gauges, counters and histograms every room reports to.
type Metrics struct {
	Registry *prometheus.Registry

	IngressRequests *prometheus.CounterVec   // by result: accepted, challenge, unknown_endpoint, disabled, too_large, rate_limited, body_memory, storage, blob_store, replica, draining, bad_request
	IngestSeconds   prometheus.Histogram     // durable commit wait as ingress sees it
	Messages        *prometheus.CounterVec   // settled messages by state and outcome
	ProcessSeconds  prometheus.Histogram     // one processing attempt
	EventsCreated   prometheus.Counter       // events committed by processing
	EventsFiltered  prometheus.Counter       // interpreted events a connection's filter dropped
	Conflicts       prometheus.Counter       // same provider event id, different content
	WorkerClaims    *prometheus.CounterVec   // claim calls by result: work, empty, error
	HandedOver      prometheus.Counter       // messages their commit handed to the local worker, unclaimed
	HandoffReleased prometheus.Counter       // handed-over messages released for a claim after waiting while ingest was under pressure
	Deliveries      *prometheus.CounterVec   // delivery attempts by outcome
	FanOuts         *prometheus.CounterVec   // events fanned out, by the state the fan-out left them in
	DeliverySeconds *prometheus.HistogramVec // consumer call latency by outcome
	// ConsumerDeliveries and ConsumerDeliverySeconds are the same per
	// consumer, by id: nil unless Options.PerConsumer, since an id names
	// an org's consumer to whoever reads /metrics. Record through
	// ConsumerOutcome and ConsumerLatency.
	ConsumerDeliveries      *prometheus.CounterVec
	ConsumerDeliverySeconds *prometheus.HistogramVec
	EndToEnd                prometheus.Histogram // received → handled by a consumer (replays excluded)
	// KeyFailures counts messages released because this process's master
	// key cannot open their connection's secrets: a configuration error.
	KeyFailures prometheus.Counter
	// Notifications counts operational notifications by result: sent,
	// dropped (no settings, or a topic not subscribed), failed (an attempt
	// to be retried) and given_up (its attempts spent).
	Notifications *prometheus.CounterVec
	// OrgEventsThrottled counts the times an org's settles went past its
	// events-per-second budget, its messages then waiting queued until it
	// is back within it; OrgsEventsWaiting is how many orgs wait so now.
	// Neither names an org.
	OrgEventsThrottled prometheus.Counter
	OrgsEventsWaiting  prometheus.Gauge
	// BlobSweeps counts the sweeps of object storage for the objects no
	// body names, by result: swept, or failed (tried again by the next).
	BlobSweeps *prometheus.CounterVec
}

// Options choose what the metrics may reveal.
type Options struct {
	// PerConsumer adds the series labelled by consumer id. Off, deliveries
	// count only in the aggregates (intake_deliveries_total,
	// intake_delivery_seconds), which name no org or consumer.
	PerConsumer bool
}

// New registers intake's metrics and the Go runtime's on a new registry,
// with no series per consumer.
func New() *Metrics { return NewWith(Options{}) }

// NewWith is New with the series o asks for.
func NewWith(o Options) *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: r,
		IngressRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_ingress_requests_total", Help: "Webhook requests answered by ingress, by result.",
		}, []string{"result"}),
		IngestSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "intake_ingest_commit_seconds", Help: "Time from a complete request to its durable commit.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_messages_settled_total", Help: "Processing attempts settled, by resulting state and outcome.",
		}, []string{"state", "outcome"}),
		ProcessSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "intake_process_seconds", Help: "Time to verify, interpret and settle one message attempt.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		EventsCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "intake_events_created_total", Help: "Events committed by message processing.",
		}),
		EventsFiltered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "intake_events_filtered_total", Help: "Interpreted events a connection's filter dropped before they were created.",
		}),
		Conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "intake_message_conflicts_total", Help: "Messages whose provider event id was seen with other content.",
		}),
		WorkerClaims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_worker_claims_total", Help: "Worker claim rounds, by result.",
		}, []string{"result"}),
		HandedOver: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "intake_messages_handed_over_total", Help: "Messages the commit that stored them handed to this process's worker, with no claim.",
		}),
		HandoffReleased: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "intake_messages_handoff_released_total", Help: "Handed-over messages released for any process to claim after waiting while ingest was under pressure.",
		}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_deliveries_total", Help: "Consumer delivery attempts, by outcome.",
		}, []string{"outcome"}),
		FanOuts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_events_fanned_out_total", Help: "Events fanned out to their consumers, by the state the fan-out left them in: routed, filtered or no_consumer.",
		}, []string{"state"}),
		DeliverySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "intake_delivery_seconds", Help: "Consumer call latency, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"outcome"}),
	}
	m.EndToEnd = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "intake_end_to_end_seconds", Help: "Time from a webhook's receipt to a consumer handling its event (first deliveries).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	})
	r.MustRegister(m.EndToEnd, m.IngressRequests, m.IngestSeconds, m.Messages, m.ProcessSeconds, m.EventsCreated, m.EventsFiltered, m.Conflicts,
		m.WorkerClaims, m.HandedOver, m.HandoffReleased, m.Deliveries, m.FanOuts, m.DeliverySeconds)
	if o.PerConsumer {
		m.ConsumerDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_consumer_deliveries_total", Help: "Delivery attempts to each consumer, by outcome (handled, ignored, retry, filtered, dropped).",
		}, []string{"consumer_id", "outcome"})
		m.ConsumerDeliverySeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "intake_consumer_delivery_seconds", Help: "Call latency of each consumer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"consumer_id"})
		r.MustRegister(m.ConsumerDeliveries, m.ConsumerDeliverySeconds)
	}
	m.KeyFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "intake_worker_key_failures_total", Help: "Messages released because this process's master key cannot open their connection's secrets.",
	})
	r.MustRegister(m.KeyFailures)
	m.Notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "intake_notifications_total", Help: "Operational notifications by result: sent, dropped, failed (to be retried), given_up.",
	}, []string{"result"})
	r.MustRegister(m.Notifications)
	m.OrgEventsThrottled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "intake_org_events_throttled_total", Help: "Times an org went past its events-per-second budget; its messages then waited queued.",
	})
	m.OrgsEventsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "intake_orgs_events_waiting", Help: "Orgs past their events-per-second budget whose messages wait queued now.",
	})
	r.MustRegister(m.OrgEventsThrottled, m.OrgsEventsWaiting)
	m.BlobSweeps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "intake_blob_sweeps_total", Help: "Sweeps of object storage for the objects no body names, by result: swept, failed (tried again by the next).",
	}, []string{"result"})
	r.MustRegister(m.BlobSweeps)
	return m
}

// ConsumerOutcome counts one call of a consumer (or a decision to make
// none) by its outcome, when series per consumer are kept.
func (m *Metrics) ConsumerOutcome(consumerID, outcome string) {
	if m.ConsumerDeliveries != nil {
		m.ConsumerDeliveries.WithLabelValues(consumerID, outcome).Inc()
	}
}

// ConsumerLatency records how long a consumer took to answer a call, when
// series per consumer are kept.
func (m *Metrics) ConsumerLatency(consumerID string, d time.Duration) {
	if m.ConsumerDeliverySeconds != nil {
		m.ConsumerDeliverySeconds.WithLabelValues(consumerID).Observe(d.Seconds())
	}
}
