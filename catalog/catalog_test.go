package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/catalog"
	"github.com/intakehq/intake/internal/testkit"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type org struct {
	id, conn string
}

func newOrg(t *testing.T, s intake.Store) org {
	t.Helper()
	ctx := context.Background()
	o := org{id: intake.NewID(), conn: intake.NewID()}
	if err := s.CreateOrg(ctx, intake.Org{ID: o.id, Name: "acme-" + o.id[len(o.id)-12:], CreatedAt: t0},
		intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(o.id)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConnection(ctx, intake.Connection{ID: o.conn, OrgID: o.id, Provider: "stripe", Name: "billing",
		SealedSecrets: []byte{1}, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o org) event(typ, data string, at time.Time) intake.Event {
	return intake.Event{ID: intake.NewID(), OrgID: o.id, ConnectionID: o.conn, Type: typ, Data: []byte(data), ReceivedAt: at, CreatedAt: at}
}

func (o org) key(typ string) intake.EventTypeKey {
	return intake.EventTypeKey{ConnectionID: o.conn, Type: typ}
}

func detail(t *testing.T, s intake.Store, k intake.EventTypeKey, now time.Time) intake.EventTypeDetail {
	t.Helper()
	d, err := s.EventType(context.Background(), intake.Scope{}, k, now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func schemaNotices(t *testing.T, s intake.Store) []intake.Notice {
	t.Helper()
	ns, err := s.UnsentNotices(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(ns, func(n intake.Notice) bool { return n.Topic != intake.NoticeSchemaChanged })
}

func TestALearnerRecordsEachDriftOnceWithANotice(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	clock := testkit.NewClock(t0)
	l := catalog.New(catalog.Config{Store: s, Clock: clock})

	l.Observe([]intake.Event{o.event("stripe.invoice.paid", `{"id":"in_1","amount":100,"at":"2026-11-30T12:00:00Z"}`, t0)})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := detail(t, s, o.key("stripe.invoice.paid"), t0)
	if d.Total != 1 || len(d.Changes) != 0 || len(schemaNotices(t, s)) != 0 || d.Schema == nil {
		t.Fatalf("after the first event: total %d changes %+v schema %s; the first event is no drift", d.Total, d.Changes, d.Schema)
	}

	clock.Advance(time.Second)
	drifted := o.event("stripe.invoice.paid", `{"id":"in_2","amount":"100","at":"2026-11-30T12:00:01Z","currency":"eur"}`, t0.Add(time.Second))
	l.Observe([]intake.Event{drifted})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d = detail(t, s, o.key("stripe.invoice.paid"), t0)
	var got []string
	for _, c := range d.Changes {
		if c.ExampleEventID != drifted.ID || !c.At.Equal(drifted.ReceivedAt) {
			t.Fatalf("change %+v does not name the event that showed it", c)
		}
		got = append(got, c.Path+" "+c.Change)
	}
	slices.Sort(got)
	if want := []string{"$.amount type_changed", "$.currency added"}; !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if d.ExampleEventID != drifted.ID || string(d.Example) != string(drifted.Data) {
		t.Fatalf("example %s (%s), want the drifted event", d.Example, d.ExampleEventID)
	}
	ns := schemaNotices(t, s)
	if len(ns) != 1 || ns[0].Subject != o.conn+"/stripe.invoice.paid" || ns[0].OrgID != o.id {
		t.Fatalf("notices %+v, want one about the type", ns)
	}

	// The same shape again is no drift.
	clock.Advance(time.Second)
	l.Observe([]intake.Event{o.event("stripe.invoice.paid", `{"id":"in_3","amount":"7","at":"2026-11-30T12:00:02Z","currency":"usd"}`, t0.Add(2*time.Second))})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d = detail(t, s, o.key("stripe.invoice.paid"), t0); d.Total != 3 || len(d.Changes) != 2 || len(schemaNotices(t, s)) != 1 {
		t.Fatalf("total %d, %d changes, %d notices after a known shape", d.Total, len(d.Changes), len(schemaNotices(t, s)))
	}
}

func TestCountsAreExactWhileOnlyAFewEventsATypeASecondAreSampled(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	l := catalog.New(catalog.Config{Store: s, Clock: testkit.NewClock(t0), SamplesPerSecond: 1})
	// In one second: one event of the usual shape, then a burst with a new
	// field. Only the first is inferred from, so the burst is no drift yet.
	burst := []intake.Event{o.event("github.push", `{"ref":"main"}`, t0)}
	for range 500 {
		burst = append(burst, o.event("github.push", `{"ref":"main","forced":true}`, t0.Add(500*time.Millisecond)))
	}
	l.Observe(burst)
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := detail(t, s, o.key("github.push"), t0)
	if d.Total != 501 || d.Count24h != 501 || len(d.Changes) != 0 {
		t.Fatalf("total %d count_24h %d changes %+v, want every event counted and one inferred", d.Total, d.Count24h, d.Changes)
	}
	// The next second's sample shows it.
	l.Observe([]intake.Event{o.event("github.push", `{"ref":"main","forced":true}`, t0.Add(time.Second))})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d = detail(t, s, o.key("github.push"), t0); d.Total != 502 || len(d.Changes) != 1 || d.Changes[0].Path != "$.forced" {
		t.Fatalf("total %d changes %+v", d.Total, d.Changes)
	}
}

func TestReplaysOfCountedEventsAndTrimmedDataAreNotLearntFrom(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	l := catalog.New(catalog.Config{Store: s, Clock: testkit.NewClock(t0)})
	first := o.event("stripe.charge.succeeded", `{"id":"ch_1"}`, t0)
	replay := o.event("stripe.charge.succeeded", `{"id":"ch_1","other":1}`, t0)
	replay.Replay, replay.ReplayOf = true, first.ID
	firstOfItsKind := o.event("stripe.charge.succeeded", `{"id":"ch_2"}`, t0) // a replay of a message that made no event
	firstOfItsKind.Replay = true
	trimmed := o.event("stripe.charge.succeeded", `{"id":"ch_3","extra":{}}`, t0)
	trimmed.DataTruncated = true
	l.Observe([]intake.Event{first, replay, firstOfItsKind, trimmed})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := detail(t, s, o.key("stripe.charge.succeeded"), t0)
	if d.Total != 3 || len(d.Changes) != 0 {
		t.Fatalf("total %d (want 3: the replay of a counted event is not), changes %+v (want none: trimmed data is no shape)", d.Total, d.Changes)
	}
}

// racing lets another learner flush between a learner's read of the
// schemas and its write, once.
type racing struct {
	intake.Store
	once   sync.Once
	before func()
}

func (r *racing) RecordEventTypes(ctx context.Context, ups []intake.EventTypeUpdate) ([]intake.EventTypeKey, error) {
	r.once.Do(r.before)
	return r.Store.RecordEventTypes(ctx, ups)
}

func TestTwoLearnersOfOneTypeMergeOverEachOthersSchema(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	clock := testkit.NewClock(t0)
	a := catalog.New(catalog.Config{Store: s, Clock: clock})
	a.Observe([]intake.Event{o.event("t", `{"a":1,"both":1}`, t0)})
	r := &racing{Store: s, before: func() {
		if err := a.Flush(ctx); err != nil {
			t.Error(err)
		}
	}}
	b := catalog.New(catalog.Config{Store: r, Clock: clock})
	b.Observe([]intake.Event{o.event("t", `{"b":1,"both":1}`, t0)})
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := detail(t, s, o.key("t"), t0)
	if d.Total != 2 || d.Version != 2 {
		t.Fatalf("total %d version %d, want both learners' counts and schemas", d.Total, d.Version)
	}
	for _, field := range []string{`"a"`, `"b"`, `"both"`} {
		if !contains(d.Schema, field) {
			t.Fatalf("schema %s lacks %s", d.Schema, field)
		}
	}
	var got []string
	for _, c := range d.Changes {
		got = append(got, c.Path+" "+c.Change)
	}
	slices.Sort(got)
	if want := []string{"$.a removed", "$.b added"}; !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v: b's event against a's schema", got, want)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

// failing refuses the first write.
type failing struct {
	intake.Store
	failed bool
}

func (f *failing) RecordEventTypes(ctx context.Context, ups []intake.EventTypeUpdate) ([]intake.EventTypeKey, error) {
	if !f.failed {
		f.failed = true
		return nil, intake.Unavailable(errors.New("down"))
	}
	return f.Store.RecordEventTypes(ctx, ups)
}

func TestCountsAFailedWriteDidNotRecordAreKeptForTheNext(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	l := catalog.New(catalog.Config{Store: &failing{Store: s}, Clock: testkit.NewClock(t0)})
	l.Observe([]intake.Event{o.event("t", `{"a":1}`, t0), o.event("t", `{"a":2}`, t0)})
	if err := l.Flush(ctx); err == nil {
		t.Fatal("a failed write was not reported")
	}
	l.Observe([]intake.Event{o.event("t", `{"a":3}`, t0.Add(time.Second))})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d := detail(t, s, o.key("t"), t0); d.Total != 3 || d.Schema == nil || !d.LastSeenAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("total %d schema %s last %v, want all three counted", d.Total, d.Schema, d.LastSeenAt)
	}
}

// failingWhile refuses the first write, running meanwhile first.
type failingWhile struct {
	intake.Store
	meanwhile func()
	failed    bool
}

func (f *failingWhile) RecordEventTypes(ctx context.Context, ups []intake.EventTypeUpdate) ([]intake.EventTypeKey, error) {
	if !f.failed {
		f.failed = true
		f.meanwhile()
		return nil, intake.Unavailable(errors.New("down"))
	}
	return f.Store.RecordEventTypes(ctx, ups)
}

// TestHourlyCountsAFailedWriteDidNotRecordJoinThoseObservedMeanwhile
// guards the put-back's merge: when events of a type arrive while a flush
// fails, the counts kept from the failed flush join theirs hour by hour,
// not only in the total.
func TestHourlyCountsAFailedWriteDidNotRecordJoinThoseObservedMeanwhile(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	var l *catalog.Learner
	store := &failingWhile{Store: s, meanwhile: func() {
		l.Observe([]intake.Event{o.event("t", `{"a":3}`, t0.Add(time.Second))})
	}}
	l = catalog.New(catalog.Config{Store: store, Clock: testkit.NewClock(t0)})
	l.Observe([]intake.Event{o.event("t", `{"a":1}`, t0), o.event("t", `{"a":2}`, t0)})
	if err := l.Flush(ctx); err == nil {
		t.Fatal("a failed write was not reported")
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := detail(t, s, o.key("t"), t0)
	if d.Total != 3 || d.Count24h != 3 {
		t.Fatalf("total %d count_24h %d, want 3 and 3: the failed flush's hours kept", d.Total, d.Count24h)
	}
	if len(d.Days) != 1 || d.Days[0].Count != 3 {
		t.Fatalf("days %+v, want one day of 3", d.Days)
	}
}

// failingAgain is racing whose second read of the schemas fails: a merge
// again over a schema another learner wrote.
type failingAgain struct {
	*racing
	reads int
}

func (f *failingAgain) EventTypeStates(ctx context.Context, keys []intake.EventTypeKey) (map[intake.EventTypeKey]intake.EventType, error) {
	if f.reads++; f.reads == 2 {
		return nil, intake.Unavailable(errors.New("down"))
	}
	return f.racing.EventTypeStates(ctx, keys)
}

// TestCountsAWriteRecordedAreNotKeptWhenOnlyTheMergeAgainFails guards the
// put-back against counting twice: once a flush's counts are in, a failure
// merging its samples again over another learner's schema keeps nothing
// for the next flush.
func TestCountsAWriteRecordedAreNotKeptWhenOnlyTheMergeAgainFails(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	clock := testkit.NewClock(t0)
	a := catalog.New(catalog.Config{Store: s, Clock: clock})
	a.Observe([]intake.Event{o.event("t", `{"a":1}`, t0)})
	store := &failingAgain{racing: &racing{Store: s, before: func() {
		if err := a.Flush(ctx); err != nil {
			t.Error(err)
		}
	}}}
	b := catalog.New(catalog.Config{Store: store, Clock: clock})
	b.Observe([]intake.Event{o.event("t", `{"b":1}`, t0)})
	if err := b.Flush(ctx); err == nil {
		t.Fatal("the failed merge was not reported")
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d := detail(t, s, o.key("t"), t0); d.Total != 2 || d.Count24h != 2 {
		t.Fatalf("total %d count_24h %d, want 2 and 2: one event each learner", d.Total, d.Count24h)
	}
}

func TestRunFlushesWhatItObservedWhenItStops(t *testing.T) {
	s := testkit.SQLite(t)
	o := newOrg(t, s)
	l := catalog.New(catalog.Config{Store: s, Clock: testkit.NewClock(t0), Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	l.Observe([]intake.Event{o.event("t", `{"a":1}`, t0)})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := detail(t, s, o.key("t"), t0); d.Total != 1 {
		t.Fatalf("total %d after stopping, want 1", d.Total)
	}
}
