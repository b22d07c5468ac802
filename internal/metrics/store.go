package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/pressure"
)

// storeCollector reads the store's state at scrape time: gauges that no
// single process's counters could know once several share a database.
type storeCollector struct {
	store intake.Store
	clock intake.Clock

	messages, events, oldestMessage, oldestEvent, up *prometheus.Desc
}

// WatchStore registers gauges of the store's messages and events by state
// and of the age of the oldest due work.
func (m *Metrics) WatchStore(s intake.Store, clock intake.Clock) {
	m.Registry.MustRegister(&storeCollector{
		store: s, clock: clock,
		messages: prometheus.NewDesc("intake_messages", "Stored messages by state. On PostgreSQL above 100 000 rows, "+
			"processed and ignored are estimated from table statistics; the other states are exact.", []string{"state"}, nil),
		events: prometheus.NewDesc("intake_events", "Stored events by provider and state. On PostgreSQL above 100 000 rows, "+
			"delivered is estimated from table statistics; the other states are exact.", []string{"provider", "state"}, nil),
		oldestMessage: prometheus.NewDesc("intake_oldest_due_message_age_seconds",
			"How long the longest-waiting due message has waited (0: none due).", nil, nil),
		oldestEvent: prometheus.NewDesc("intake_oldest_due_event_age_seconds",
			"How long the longest-waiting due event has waited (0: none due).", nil, nil),
		up: prometheus.NewDesc("intake_store_up", "Whether the store answered the last scrape.", nil, nil),
	})
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.messages, c.events, c.oldestMessage, c.oldestEvent, c.up} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := c.clock.Now()
	st, err := c.store.Stats(ctx, now)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, s := range intake.MessageStates {
		ch <- prometheus.MustNewConstMetric(c.messages, prometheus.GaugeValue, float64(st.Messages[s]), string(s))
	}
	for k, n := range st.Events {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(c.oldestMessage, prometheus.GaugeValue, age(now, st.OldestDueMessage))
	ch <- prometheus.MustNewConstMetric(c.oldestEvent, prometheus.GaugeValue, age(now, st.OldestDueEvent))
}

// WatchQuota exports the store's size and the storage quota.
func (m *Metrics) WatchQuota(used func() int64, limit int64) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "intake_storage_bytes", Help: "Space the store's data takes (sampled)."},
			func() float64 { return float64(used()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "intake_storage_quota_bytes", Help: "The storage quota; 0: none."},
			func() float64 { return float64(limit) }),
	)
}

func age(now, since time.Time) float64 {
	if since.IsZero() || since.After(now) {
		return 0
	}
	return now.Sub(since).Seconds()
}

// WatchPressure exports how many requests wait for an ingest commit, and
// whether processing holds back for them.
func (m *Metrics) WatchPressure(p *pressure.Gauge) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "intake_ingest_waiting", Help: "Requests waiting for their ingest commit."},
			func() float64 { return float64(p.Waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "intake_processing_held", Help: "1 while processing holds back for ingest under pressure."},
			func() float64 {
				if p.High() {
					return 1
				}
				return 0
			}),
	)
}

// Replication is how the embedded store's replica stands, as the
// replicator tells it (package replica).
type Replication struct {
	// Lag is how long ago the replica last held every commit made by then.
	Lag time.Duration
	// LastSync is when the last successful sync ended; zero: none yet.
	LastSync time.Time
	// Errors counts the syncs that failed.
	Errors int64
}

// WatchReplication exports the replica's lag, last sync and failed syncs,
// read from status at each scrape.
func (m *Metrics) WatchReplication(status func() Replication) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "intake_replication_lag_seconds",
			Help: "How long ago the replica last held every commit made by then (--replicate)."},
			func() float64 { return status().Lag.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "intake_replication_last_sync_timestamp_seconds",
			Help: "When the last successful sync to the replica ended, in Unix seconds; 0: none yet."},
			func() float64 {
				if t := status().LastSync; !t.IsZero() {
					return float64(t.UnixMilli()) / 1000
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "intake_replication_errors_total",
			Help: "Syncs to the replica that failed."},
			func() float64 { return float64(status().Errors) }),
	)
}
