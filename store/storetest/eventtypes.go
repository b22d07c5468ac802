package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// eventTypeTests are the cases of intake.EventTypes, the catalog's store.
var eventTypeTests = []struct {
	name string
	fn   func(*testing.T, intake.Store)
}{
	{"EventTypesCountBySchemaOverTheVersionReadAndAreScoped", testEventTypes},
	{"EventTypeCountsAreAddedAndOldHoursPruned", testEventTypeHours},
	{"EventTypesCatalogedAreCountedPerConnection", testEventTypeCounts},
	{"AReadOfATypeIsOfOneMoment", testEventTypeReadIsOfOneMoment},
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

func testEventTypes(t *testing.T, s intake.Store) {
	ctx := context.Background()
	acme, globex := newFixture(t, s, "acme"), newFixture(t, s, "globex")
	paid := intake.EventTypeKey{ConnectionID: acme.conn.ID, Type: "stripe.invoice.paid"}
	now := t0.Add(30 * time.Minute)
	hour := t0.Truncate(time.Hour)

	states, err := s.EventTypeStates(ctx, []intake.EventTypeKey{paid})
	if err != nil || len(states) != 0 {
		t.Fatalf("states before anything was seen: %+v %v", states, err)
	}
	schema1 := json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	exampleID := intake.NewID()
	first := intake.EventTypeUpdate{OrgID: acme.org.ID, EventTypeKey: paid, Count: 3, First: t0, Last: t0.Add(time.Minute),
		Hours: map[time.Time]int64{hour: 3}, Learnt: true, Schema: schema1, Example: json.RawMessage(`{"id":"in_1"}`), ExampleEventID: exampleID}
	other := intake.EventTypeUpdate{OrgID: globex.org.ID, EventTypeKey: intake.EventTypeKey{ConnectionID: globex.conn.ID, Type: "stripe.charge.failed"},
		Count: 1, First: t0, Last: t0, Hours: map[time.Time]int64{hour: 1}, Learnt: true, Schema: json.RawMessage(`{"type":"object"}`),
		Example: json.RawMessage(`{}`), ExampleEventID: intake.NewID()}
	stale, err := s.RecordEventTypes(ctx, []intake.EventTypeUpdate{first, other})
	if err != nil || len(stale) != 0 {
		t.Fatalf("first record: stale %v, %v", stale, err)
	}
	states, err = s.EventTypeStates(ctx, []intake.EventTypeKey{paid, {ConnectionID: acme.conn.ID, Type: "never.seen"}})
	if err != nil || len(states) != 1 || states[paid].Version != 1 || !jsonEqual(states[paid].Schema, schema1) || states[paid].OrgID != acme.org.ID {
		t.Fatalf("states = %+v %v", states, err)
	}

	// A schema written over the version read lands with its changes and
	// notice; one written over a version that moved on does not.
	schema2 := json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"id":{"type":"string"},"amount":{"type":"integer"}},"required":["id"]}`)
	driftID := intake.NewID()
	change := intake.EventTypeChange{ID: intake.NewID(), OrgID: acme.org.ID, ConnectionID: paid.ConnectionID, Type: paid.Type,
		At: t0.Add(2 * time.Minute), Path: "$.amount", Change: intake.ChangeAdded, To: []string{"integer"}, ExampleEventID: driftID}
	notice := intake.Notice{ID: intake.NewID(), OrgID: acme.org.ID, Topic: intake.NoticeSchemaChanged, Subject: paid.ConnectionID + "/" + paid.Type,
		Detail: "stripe.invoice.paid changed shape: $.amount added (integer)", At: t0.Add(2 * time.Minute)}
	second := intake.EventTypeUpdate{OrgID: acme.org.ID, EventTypeKey: paid, Count: 1, First: t0.Add(2 * time.Minute), Last: t0.Add(2 * time.Minute),
		Hours: map[time.Time]int64{hour: 1}, Learnt: true, Version: 1, Schema: schema2, Example: json.RawMessage(`{"id":"in_2","amount":5}`),
		ExampleEventID: driftID, Changes: []intake.EventTypeChange{change}, Notices: []intake.Notice{notice}}
	late := second
	late.Count, late.Hours = 0, nil
	late.Schema, late.ExampleEventID = schema1, intake.NewID()
	late.Changes = []intake.EventTypeChange{{ID: intake.NewID(), OrgID: acme.org.ID, ConnectionID: paid.ConnectionID, Type: paid.Type,
		At: t0, Path: "$.lost", Change: intake.ChangeRemoved, From: []string{"string"}, ExampleEventID: late.ExampleEventID}}
	late.Notices = []intake.Notice{{ID: intake.NewID(), OrgID: acme.org.ID, Topic: intake.NoticeSchemaChanged, Subject: notice.Subject, Detail: "late", At: t0}}
	if stale, err := s.RecordEventTypes(ctx, []intake.EventTypeUpdate{second}); err != nil || len(stale) != 0 {
		t.Fatalf("second record: stale %v, %v", stale, err)
	}
	if stale, err := s.RecordEventTypes(ctx, []intake.EventTypeUpdate{late}); err != nil || !slices.Equal(stale, []intake.EventTypeKey{paid}) {
		t.Fatalf("a record over an old version: stale %v, %v; want the key back", stale, err)
	}

	own := intake.Scope{OrgID: acme.org.ID}
	d, err := s.EventType(ctx, own, paid, now)
	if err != nil {
		t.Fatal(err)
	}
	if d.OrgID != acme.org.ID || d.ConnectionName != "acme" || d.Total != 4 || d.Count24h != 4 || !d.FirstSeenAt.Equal(t0) ||
		!d.LastSeenAt.Equal(t0.Add(2*time.Minute)) || d.Version != 2 || !jsonEqual(d.Schema, schema2) ||
		!jsonEqual(d.Example, second.Example) || d.ExampleEventID != driftID {
		t.Fatalf("detail = %+v", d)
	}
	if len(d.Days) != 1 || !d.Days[0].Day.Equal(t0.Truncate(24*time.Hour)) || d.Days[0].Count != 4 {
		t.Fatalf("days = %+v", d.Days)
	}
	if len(d.Changes) != 1 {
		t.Fatalf("changes = %+v, want the one written over the version read", d.Changes)
	}
	if c := d.Changes[0]; c.ID != change.ID || !c.At.Equal(change.At) || c.Path != change.Path || c.Change != change.Change ||
		c.From != nil || !slices.Equal(c.To, change.To) || c.ExampleEventID != driftID || c.OrgID != acme.org.ID {
		t.Fatalf("change = %+v, want %+v", c, change)
	}
	notices, err := s.UnsentNotices(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var drift []intake.Notice
	for _, n := range notices {
		if n.Topic == intake.NoticeSchemaChanged {
			drift = append(drift, n)
		}
	}
	if len(drift) != 1 || drift[0].ID != notice.ID || drift[0].Subject != notice.Subject || drift[0].Detail != notice.Detail {
		t.Fatalf("schema.changed notices = %+v, want the landed one only", drift)
	}

	// Lists: an org's own types, a connection's, and staff's all.
	list, err := s.ListEventTypes(ctx, own, intake.EventTypeFilter{Now: now})
	if err != nil || len(list) != 1 || list[0].Type != paid.Type || list[0].Total != 4 || list[0].Count24h != 4 ||
		list[0].ConnectionName != "acme" || list[0].ConnectionID != acme.conn.ID {
		t.Fatalf("acme's list = %+v %v", list, err)
	}
	all, err := s.ListEventTypes(ctx, intake.Scope{}, intake.EventTypeFilter{Now: now})
	if err != nil || len(all) != 2 || all[0].ConnectionName != "acme" || all[1].ConnectionName != "globex" {
		t.Fatalf("staff's list = %+v %v", all, err)
	}
	byConn, err := s.ListEventTypes(ctx, intake.Scope{}, intake.EventTypeFilter{ConnectionID: globex.conn.ID, Now: now})
	if err != nil || len(byConn) != 1 || byConn[0].Type != "stripe.charge.failed" {
		t.Fatalf("globex's connection's list = %+v %v", byConn, err)
	}

	// Another org sees none of acme's.
	theirs := intake.Scope{OrgID: globex.org.ID}
	_, err = s.EventType(ctx, theirs, paid, now)
	wantCode(t, err, intake.ENOTFOUND)
	if l, err := s.ListEventTypes(ctx, theirs, intake.EventTypeFilter{ConnectionID: acme.conn.ID, Now: now}); err != nil || len(l) != 0 {
		t.Fatalf("globex lists acme's connection's types: %+v %v", l, err)
	}
	_, err = s.EventType(ctx, own, intake.EventTypeKey{ConnectionID: acme.conn.ID, Type: "never.seen"}, now)
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.EventType(ctx, own, intake.EventTypeKey{ConnectionID: "not-an-id", Type: paid.Type}, now)
	wantCode(t, err, intake.ENOTFOUND)

	// A deleted connection's types leave the catalog's reads.
	if err := s.Delete(ctx, own, intake.DeleteConnection, acme.conn.ID, now); err != nil {
		t.Fatal(err)
	}
	if l, err := s.ListEventTypes(ctx, own, intake.EventTypeFilter{Now: now}); err != nil || len(l) != 0 {
		t.Fatalf("a deleted connection's types are listed: %+v %v", l, err)
	}
	_, err = s.EventType(ctx, own, paid, now)
	wantCode(t, err, intake.ENOTFOUND)
}

func testEventTypeHours(t *testing.T, s intake.Store) {
	ctx := context.Background()
	acme := newFixture(t, s, "acme")
	key := intake.EventTypeKey{ConnectionID: acme.conn.ID, Type: "github.push"}
	hour := t0.Truncate(time.Hour)
	record := func(hours map[time.Time]int64, first, last time.Time) {
		t.Helper()
		var n int64
		for _, c := range hours {
			n += c
		}
		if stale, err := s.RecordEventTypes(ctx, []intake.EventTypeUpdate{{OrgID: acme.org.ID, EventTypeKey: key, Count: n,
			First: first, Last: last, Hours: hours}}); err != nil || len(stale) != 0 {
			t.Fatalf("record: stale %v, %v", stale, err)
		}
	}
	// Two processes' counts of the same hours add up; first and last seen
	// widen.
	record(map[time.Time]int64{hour: 2, hour.Add(-23 * time.Hour): 1, hour.Add(-24 * time.Hour): 5}, t0.Add(-24*time.Hour), t0)
	record(map[time.Time]int64{hour: 3}, t0.Add(-time.Minute), t0.Add(time.Minute))
	d, err := s.EventType(ctx, intake.Scope{}, key, t0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Total != 11 || d.Count24h != 6 || !d.FirstSeenAt.Equal(t0.Add(-24*time.Hour)) || !d.LastSeenAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("total %d, count_24h %d (the current hour and the 23 before), seen %v–%v", d.Total, d.Count24h, d.FirstSeenAt, d.LastSeenAt)
	}
	if d.Schema != nil || d.Example != nil || d.Version != 0 || len(d.Changes) != 0 {
		t.Fatalf("a type with counts only has a schema: %+v", d)
	}
	if len(d.Days) != 2 || !d.Days[0].Day.Equal(t0.Truncate(24*time.Hour).Add(-24*time.Hour)) || d.Days[0].Count != 6 || d.Days[1].Count != 5 {
		t.Fatalf("days = %+v", d.Days)
	}
	n, err := s.PruneEventTypeHours(ctx, hour.Add(-23*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the one hour before", n, err)
	}
	if d, err = s.EventType(ctx, intake.Scope{}, key, t0); err != nil || d.Total != 11 || len(d.Days) != 2 || d.Days[0].Count != 1 || d.Days[1].Count != 5 {
		t.Fatalf("after pruning: total %d days %+v %v; the total stays", d.Total, d.Days, err)
	}
}

// testEventTypeCounts: the catalog's bound per connection reads how many
// types each connection has, whatever org it is of.
func testEventTypeCounts(t *testing.T, s intake.Store) {
	ctx := context.Background()
	acme, globex := newFixture(t, s, "acme"), newFixture(t, s, "globex")
	var ups []intake.EventTypeUpdate
	for _, typ := range []string{"a", "b", intake.EventTypeOther} {
		ups = append(ups, intake.EventTypeUpdate{OrgID: acme.org.ID, EventTypeKey: intake.EventTypeKey{ConnectionID: acme.conn.ID, Type: typ},
			Count: 2, First: t0, Last: t0, Hours: map[time.Time]int64{t0.Truncate(time.Hour): 2}})
	}
	ups = append(ups, intake.EventTypeUpdate{OrgID: globex.org.ID, EventTypeKey: intake.EventTypeKey{ConnectionID: globex.conn.ID, Type: "a"},
		Count: 1, First: t0, Last: t0, Hours: map[time.Time]int64{t0.Truncate(time.Hour): 1}})
	if stale, err := s.RecordEventTypes(ctx, ups); err != nil || len(stale) != 0 {
		t.Fatalf("record: stale %v, %v", stale, err)
	}
	unseen := intake.NewID()
	counts, err := s.EventTypeCounts(ctx, []string{acme.conn.ID, globex.conn.ID, unseen, "not-an-id"})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 2 || counts[acme.conn.ID] != 3 || counts[globex.conn.ID] != 1 {
		t.Fatalf("counts = %v, want acme's connection 3 (other among them), globex's 1, none for the others", counts)
	}
	if counts, err := s.EventTypeCounts(ctx, nil); err != nil || len(counts) != 0 {
		t.Fatalf("counts of no connection = %v, %v", counts, err)
	}
}

// testEventTypeReadIsOfOneMoment: a flush writes a type's count and its
// changes in one commit, so a read of the type, made while flushes
// commit, shows as many changes as the count says were recorded, never
// the one without the other. (A read made of several statements, each of
// its own moment, shows the changes of a flush whose count it read
// before.)
func testEventTypeReadIsOfOneMoment(t *testing.T, s intake.Store) {
	ctx := context.Background()
	acme := newFixture(t, s, "acme")
	key := intake.EventTypeKey{ConnectionID: acme.conn.ID, Type: "github.issues.opened"}
	hour := t0.Truncate(time.Hour)
	const flushes = 150
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for v := range int64(flushes) {
			at := t0.Add(time.Duration(v) * time.Millisecond)
			up := intake.EventTypeUpdate{OrgID: acme.org.ID, EventTypeKey: key, Count: 1, First: at, Last: at,
				Hours: map[time.Time]int64{hour: 1}, Learnt: true, Version: v, Schema: json.RawMessage(`{"type":"object"}`),
				Example: json.RawMessage(`{}`), ExampleEventID: intake.NewID(),
				Changes: []intake.EventTypeChange{{ID: intake.NewID(), OrgID: acme.org.ID, ConnectionID: key.ConnectionID, Type: key.Type,
					At: at, Path: "$.n", Change: intake.ChangeAdded, To: []string{"integer"}, ExampleEventID: intake.NewID()}}}
			if stale, err := s.RecordEventTypes(ctx, []intake.EventTypeUpdate{up}); err != nil || len(stale) != 0 {
				done <- fmt.Errorf("flush %d: stale %v, %v", v, stale, err)
				return
			}
		}
	}()
	reads := 0
	for finished := false; !finished; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		d, err := s.EventType(ctx, intake.Scope{}, key, t0)
		if intake.ErrorCode(err) == intake.ENOTFOUND {
			continue // before the first flush
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := min(d.Total, intake.MaxEventTypeChanges); int64(len(d.Changes)) != want || d.Version != d.Total || d.Count24h != d.Total {
			t.Fatalf("read %d shows total %d, %d in the last 24 hours, version %d and %d changes: not one moment",
				reads, d.Total, d.Count24h, d.Version, len(d.Changes))
		}
	}
	if d, err := s.EventType(ctx, intake.Scope{}, key, t0); err != nil || d.Total != flushes {
		t.Fatalf("after every flush: total %d, %v", d.Total, err)
	}
}
