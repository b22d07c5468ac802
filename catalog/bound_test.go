package catalog_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/catalog"
	"github.com/intakehq/intake/internal/testkit"
)

// TestTypesPastAConnectionsBoundCountUnderOtherWithOneNotice: with room for
// three types a connection, the fourth and later types new to it are
// counted under "other", learn no schema, and leave one notice, on either
// store; another connection's catalog has its own room.
func TestTypesPastAConnectionsBoundCountUnderOtherWithOneNotice(t *testing.T) {
	for name, open := range testkit.Stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			o, p := newOrg(t, s), newOrg(t, s)
			clock := testkit.NewClock(t0)
			l := catalog.New(catalog.Config{Store: s, Clock: clock, TypesPerConnection: 3})
			flush := func(events ...intake.Event) {
				t.Helper()
				l.Observe(events)
				if err := l.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				clock.Advance(time.Second)
			}
			flush(o.event("a", `{"x":1}`, t0), o.event("b", `{"x":1}`, t0))
			flush(o.event("a", `{"x":2}`, t0), o.event("c", `{"x":1}`, t0), o.event("d", `{"d":1}`, t0),
				o.event("e", `{"e":"s"}`, t0), o.event("e", `{"e":"t"}`, t0))
			flush(o.event("f", `{"f":1}`, t0), o.event("d", `{"d":2}`, t0), p.event("d", `{"d":1}`, t0))

			list, err := s.ListEventTypes(ctx, intake.Scope{OrgID: o.id}, intake.EventTypeFilter{Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			totals := map[string]int64{}
			for _, et := range list {
				got = append(got, et.Type)
				totals[et.Type] = et.Total
			}
			if want := []string{"a", "b", "c", intake.EventTypeOther}; !slices.Equal(got, want) {
				t.Fatalf("types %v, want %v", got, want)
			}
			if totals["a"] != 2 || totals[intake.EventTypeOther] != 5 {
				t.Fatalf("totals %v, want a 2 and other 5 (d twice, e twice, f once)", totals)
			}
			other := detail(t, s, o.key(intake.EventTypeOther), t0)
			if contains(other.Schema, "properties") || len(other.Changes) != 0 {
				t.Fatalf("other learnt a schema %s, changes %+v; want none", other.Schema, other.Changes)
			}
			var full []intake.Notice
			for _, n := range schemaNotices(t, s) {
				if n.Subject == o.conn+"/"+intake.EventTypeOther {
					full = append(full, n)
				}
			}
			if len(full) != 1 || !contains([]byte(full[0].Detail), "full") {
				t.Fatalf("notices of the full catalog = %+v, want one", full)
			}
			if d := detail(t, s, p.key("d"), t0); d.Total != 1 || d.Schema == nil {
				t.Fatalf("the other connection's type d: total %d schema %s; want it catalogued in its own room", d.Total, d.Schema)
			}
		})
	}
}

// TestBoundKeepsCataloguedTypesAndFoldsNewOnesPastTheRoomLeft: a pure
// table of Bound: known types stay, new ones fill the room left in key
// order, the rest fold into other with their counts and hours.
func TestBoundKeepsCataloguedTypesAndFoldsNewOnesPastTheRoomLeft(t *testing.T) {
	key := func(typ string) intake.EventTypeKey { return intake.EventTypeKey{ConnectionID: "c1", Type: typ} }
	hour := t0.Truncate(time.Hour)
	obs := func(typ string, n int64) catalog.Observed {
		return catalog.Observed{OrgID: "o1", Key: key(typ), Count: n, First: t0, Last: t0.Add(time.Duration(n) * time.Second),
			Hours: map[time.Time]int64{hour: n}, Samples: []catalog.Sample{{EventID: typ, At: t0, Data: []byte(`{}`)}}}
	}
	states := map[intake.EventTypeKey]intake.EventType{key("known"): {}, key(intake.EventTypeOther): {}}
	// Two types and other catalogued, a bound of three: room for one.
	out := catalog.Bound(states, map[string]int{"c1": 3}, []catalog.Observed{obs("known", 1), obs("new1", 2), obs("new2", 3), obs("new3", 4)}, 3)
	var got []string
	for _, o := range out {
		got = append(got, o.Key.Type)
	}
	if want := []string{"known", "new1", intake.EventTypeOther}; !slices.Equal(got, want) {
		t.Fatalf("bounded types %v, want %v", got, want)
	}
	other := out[2]
	if other.Count != 7 || other.Folded != 2 || other.Hours[hour] != 7 || !other.Last.Equal(t0.Add(4*time.Second)) || len(other.Samples) != 1 {
		t.Fatalf("other = %+v, want new2 and new3 folded: 7 events, one sample kept", other)
	}
	if out := catalog.Bound(states, map[string]int{"c1": 3}, []catalog.Observed{obs("new1", 1)}, 0); len(out) != 1 || out[0].Key.Type != "new1" {
		t.Fatalf("no bound folded %+v", out)
	}
}
