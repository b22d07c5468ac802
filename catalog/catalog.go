// Package catalog learns the event types intake receives (DESIGN §13): per
// connection and type, when it was first and last seen, how many arrived
// each hour, an example, and a JSON Schema inferred from the events'
// data; and it records each drift of a type's shape, with a notice on
// the topic schema.changed.
//
// It stays off the webhook's path. The worker hands each settle's events
// to Observe, which only counts them and keeps a few of each type's data
// (at most SamplesPerSecond a type, MaxSamples in all, between two
// flushes) in memory, under a lock held for a few map updates: nothing is
// parsed there and nothing waits for the store. Every Interval the
// learner's own loop (Run) infers the samples' schemas, merges them into
// the stored ones (read, decide, write) and adds the counts, in one store
// transaction. So counts are exact while schemas learn from a sample when
// the rate is high.
//
// Every process learns from the events it settles; nothing is singular, so
// no leader is needed on PostgreSQL: counts are added, and a schema is
// written only over the version read, so when two processes learn the same
// type at once the later reads the earlier's schema and merges again. A
// process killed without warning forgets the counts of its last interval
// (the events themselves are kept); a store that fails keeps them for the
// next flush.
package catalog

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/intakehq/intake"
)

// Config wires a Learner. Store is required.
type Config struct {
	Store intake.EventTypes
	Clock intake.Clock
	// Interval is how often the learner writes what it observed (default
	// 1s).
	Interval time.Duration
	// SamplesPerSecond bounds the events of one type whose data is kept
	// for inference each second (default 4); MaxSamples bounds all kept
	// between two flushes (default 256).
	SamplesPerSecond int
	MaxSamples       int
	// TypesPerConnection bounds the types catalogued per connection
	// (default 1000; below 0: no bound): past it, new types count under
	// intake.EventTypeOther, with no schema (see Bound).
	TypesPerConnection int
	Logger             *slog.Logger
}

// Learner builds the event-type catalog from the events a process settles.
type Learner struct {
	cfg Config

	mu      sync.Mutex
	pending map[intake.EventTypeKey]*tally
	samples int // kept in pending

	lastPrune time.Time // only Run's goroutine touches it
}

// tally is what was observed of one type since the last flush.
type tally struct {
	org         string
	count       int64
	first, last time.Time
	hours       map[time.Time]int64
	samples     []Sample
	// second is the Unix second the samples taken counts.
	second int64
	taken  int
}

// Sample is one event whose data the learner infers a schema from.
type Sample struct {
	EventID string
	At      time.Time
	Data    []byte
}

// New returns a learner with defaults filled in.
func New(cfg Config) *Learner {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.SamplesPerSecond == 0 {
		cfg.SamplesPerSecond = 4
	}
	if cfg.MaxSamples == 0 {
		cfg.MaxSamples = 256
	}
	if cfg.TypesPerConnection == 0 {
		cfg.TypesPerConnection = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Learner{cfg: cfg, pending: map[intake.EventTypeKey]*tally{}}
}

// Observe counts events a settle created and keeps some of their data for
// the next flush. It never blocks on the store and parses nothing. Replays
// of events already counted are not counted again, and the data of an event
// an adapter trimmed (data_truncated) is not a sample of its type's shape.
func (l *Learner) Observe(events []intake.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range events {
		e := &events[i]
		if e.Replay && e.ReplayOf != "" {
			continue
		}
		at := e.ReceivedAt
		if at.IsZero() {
			at = e.CreatedAt
		}
		at = at.UTC()
		k := intake.EventTypeKey{ConnectionID: e.ConnectionID, Type: e.Type}
		t := l.pending[k]
		if t == nil {
			t = &tally{org: e.OrgID, first: at, last: at, hours: map[time.Time]int64{}}
			l.pending[k] = t
		}
		t.count++
		t.hours[at.Truncate(time.Hour)]++
		if at.Before(t.first) {
			t.first = at
		}
		if at.After(t.last) {
			t.last = at
		}
		if e.DataTruncated || l.samples >= l.cfg.MaxSamples {
			continue
		}
		if s := at.Unix(); s != t.second {
			t.second, t.taken = s, 0
		}
		if t.taken < l.cfg.SamplesPerSecond {
			t.taken++
			t.samples = append(t.samples, Sample{EventID: e.ID, At: at, Data: e.Data})
			l.samples++
		}
	}
}

// Run flushes every Interval until ctx ends, and once more on the way out
// so a drained process keeps its counts.
func (l *Learner) Run(ctx context.Context) error {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			l.flushLogged(fctx)
			return nil
		case <-t.C:
			l.flushLogged(ctx)
		}
	}
}

func (l *Learner) flushLogged(ctx context.Context) {
	if err := l.Flush(ctx); err != nil && ctx.Err() == nil {
		l.cfg.Logger.Warn("catalog: could not record event types; what was not recorded waits for the next try", "err", err)
	}
}

// staleTries bounds how often a flush reads and merges again a schema
// another process wrote meanwhile.
const staleTries = 3

// Flush writes what was observed since the last flush: counts, and the
// samples merged into the types' schemas. Counts a failed write did not
// record are kept for the next flush.
func (l *Learner) Flush(ctx context.Context) error {
	l.mu.Lock()
	taken := l.pending
	l.pending, l.samples = map[intake.EventTypeKey]*tally{}, 0
	l.mu.Unlock()
	if len(taken) > 0 {
		if counted, err := l.record(ctx, taken); err != nil {
			if !counted {
				l.putBack(taken)
			}
			return err
		}
	}
	return l.prune(ctx)
}

// record writes taken; counted tells, when it fails, whether the counts
// were in before it did (only a merge again over a newer schema failed).
func (l *Learner) record(ctx context.Context, taken map[intake.EventTypeKey]*tally) (counted bool, err error) {
	now := l.cfg.Clock.Now().UTC()
	keys := slices.SortedFunc(maps.Keys(taken), compareKeys)
	observed := make([]Observed, len(keys))
	for i, k := range keys {
		t := taken[k]
		observed[i] = Observed{OrgID: t.org, Key: k, Count: t.count, First: t.first, Last: t.last, Hours: t.hours, Samples: t.samples}
	}
	for try := 1; len(observed) > 0; try++ {
		states, err := l.cfg.Store.EventTypeStates(ctx, keysOf(observed))
		if err != nil {
			return counted, err
		}
		if observed, err = l.bound(ctx, states, observed); err != nil {
			return counted, err
		}
		stale, err := l.cfg.Store.RecordEventTypes(ctx, Decide(states, observed, now))
		if err != nil {
			return counted, err
		}
		counted = true
		// Counts are in; what lost the race is merged again over the
		// schema that won it.
		var again []Observed
		for _, o := range observed {
			if slices.Contains(stale, o.Key) {
				again = append(again, Observed{OrgID: o.OrgID, Key: o.Key, Samples: o.Samples, Folded: o.Folded})
			}
		}
		if len(again) > 0 && try == staleTries {
			l.cfg.Logger.Warn("catalog: schemas kept changing under this process; dropped its samples", "types", len(again))
			return counted, nil
		}
		observed = again
	}
	return counted, nil
}

// bound keeps the connections' catalogs within TypesPerConnection (see
// Bound), reading how many types the connections of new ones have only
// when there are new ones.
func (l *Learner) bound(ctx context.Context, states map[intake.EventTypeKey]intake.EventType, observed []Observed) ([]Observed, error) {
	var conns []string
	seen := map[string]bool{}
	for _, o := range observed {
		if _, ok := states[o.Key]; !ok && !seen[o.Key.ConnectionID] {
			seen[o.Key.ConnectionID] = true
			conns = append(conns, o.Key.ConnectionID)
		}
	}
	if len(conns) == 0 || l.cfg.TypesPerConnection < 0 {
		return observed, nil
	}
	catalogued, err := l.cfg.Store.EventTypeCounts(ctx, conns)
	if err != nil {
		return nil, err
	}
	return Bound(states, catalogued, observed, l.cfg.TypesPerConnection), nil
}

// putBack returns counts a failed flush did not record; their samples are
// dropped (newer ones will come).
func (l *Learner) putBack(taken map[intake.EventTypeKey]*tally) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, t := range taken {
		p := l.pending[k]
		if p == nil {
			t.samples, t.taken = nil, 0
			l.pending[k] = t
			continue
		}
		p.count += t.count
		p.first, p.last = minTime(p.first, t.first), maxTime(p.last, t.last)
		for h, n := range t.hours {
			p.hours[h] += n
		}
	}
}

// prune drops counts older than the catalog's history, once an hour.
func (l *Learner) prune(ctx context.Context) error {
	now := l.cfg.Clock.Now()
	if now.Sub(l.lastPrune) < time.Hour {
		return nil
	}
	if _, err := l.cfg.Store.PruneEventTypeHours(ctx, now.Add(-intake.EventTypeHistory)); err != nil {
		return err
	}
	l.lastPrune = now
	return nil
}

// keysOf lists the observed keys, and the EventTypeOther key of each of
// their connections, which Bound needs the state of.
func keysOf(os []Observed) []intake.EventTypeKey {
	seen := make(map[intake.EventTypeKey]bool, len(os)+1)
	out := make([]intake.EventTypeKey, 0, len(os)+1)
	for _, o := range os {
		for _, k := range []intake.EventTypeKey{o.Key, {ConnectionID: o.Key.ConnectionID, Type: intake.EventTypeOther}} {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

func compareKeys(a, b intake.EventTypeKey) int {
	if c := strings.Compare(a.ConnectionID, b.ConnectionID); c != 0 {
		return c
	}
	return strings.Compare(a.Type, b.Type)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
