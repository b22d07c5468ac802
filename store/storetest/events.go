package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testManyEventsInOneSettle: one settle makes more events than a store
// writes in one statement (SQLite binds 64 rows at most), and a remainder;
// every event reads back as it was written, field for field, and search
// finds each by a word of its data.
func testManyEventsInOneSettle(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m := f.ingest(t, s, `{"object":"list","count":150}`, t0)
	c := claimOne(t, s, t0)
	kinds := []intake.EventKind{intake.KindEvent, intake.KindChangeNotice, intake.KindLinkUnfurl}
	events := make([]intake.Event, 150)
	for i := range events {
		e := intake.Event{
			ID: intake.NewID(), OrgID: f.org.ID, ConnectionID: f.conn.ID, MessageID: m.ID, Provider: "stripe",
			Type: fmt.Sprintf("stripe.object_%03d.updated", i), Kind: kinds[i%len(kinds)], ProviderEventID: fmt.Sprintf("evt_%03d", i),
			OccurredAt: t0.Add(-time.Duration(i) * (time.Minute + time.Microsecond)), ReceivedAt: t0.Add(time.Duration(i) * time.Microsecond),
			Data: json.RawMessage(fmt.Sprintf(`{"id": "evt_%03d", "mark":"mark%04d", "n":%d, "big":12345678901234567890, "x":1.50,`+
				`"note":"<a&b> \"q\" \\ \u00e9 ☃", "list":[1, null, true, {"k":"v"}]}`, i, i, i)),
			DataTruncated: i%4 == 1, ObjectIDs: []string{fmt.Sprintf("obj_%03d", i)}, State: intake.EventPending,
			Attempt: i % 3, MaxAttempts: 1 + i%9, CreatedAt: t0.Add(time.Duration(i) * time.Millisecond),
		}
		if i%2 == 0 {
			e.ObjectIDs = append(e.ObjectIDs, fmt.Sprintf("cus_%03d", i), "shared")
		}
		if i%3 != 0 {
			e.NextAttemptAt = t0.Add(time.Duration(i) * time.Second)
		}
		if i%5 == 0 {
			e.Subject = &intake.Subject{App: fmt.Sprintf("app_%03d", i), RecordID: fmt.Sprintf("rec_%03d", i)}
		}
		if i%7 != 0 {
			e.TraceParent = fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)
		}
		if i%10 == 9 {
			// A replay of the event before it: the settle names that one.
			e.Replay, e.ProviderEventID = true, events[i-1].ProviderEventID
		}
		events[i] = e
	}
	out, err := s.SettleMessage(ctx, t0, processed(c, nil, events...))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Events) != len(events) {
		t.Fatalf("the settle made %d events, want %d", len(out.Events), len(events))
	}
	for i, want := range events {
		if want.Replay {
			want.ReplayOf = events[i-1].ID
		}
		got, err := s.Event(ctx, intake.Scope{OrgID: f.org.ID}, want.ID)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		for _, d := range fieldDiffs(got, want) {
			t.Errorf("event %d: %s", i, d)
		}
	}
	if got, err := s.Message(ctx, intake.Scope{}, m.ID); err != nil || len(got.EventIDs) != len(events) {
		t.Fatalf("the message names %d events, want %d: %v", len(got.EventIDs), len(events), err)
	}

	find := func(pass string) {
		t.Helper()
		for i, e := range events {
			page, err := s.ListEvents(ctx, intake.Scope{OrgID: f.org.ID}, intake.EventFilter{
				Search: intake.Search{Words: []string{fmt.Sprintf("mark%04d", i)}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 1 || page.Items[0].ID != e.ID {
				t.Errorf("%s search for event %d's word found %d events, want it alone", pass, i, len(page.Items))
			}
		}
	}
	find("as written:")
	if ix, ok := s.(searchIndexer); ok {
		if _, err := ix.IndexSearch(ctx); err != nil {
			t.Fatal(err)
		}
		find("indexed:")
	}
}

// fieldDiffs names the fields of two events that differ: times by the
// instant, everything else by value.
func fieldDiffs(got, want intake.Event) []string {
	var out []string
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		gf, wf := g.Field(i).Interface(), w.Field(i).Interface()
		same := reflect.DeepEqual(gf, wf)
		if gt, ok := gf.(time.Time); ok {
			same = gt.Equal(wf.(time.Time))
		}
		if !same {
			out = append(out, fmt.Sprintf("%s = %s, want %s", g.Type().Field(i).Name, show(gf), show(wf)))
		}
	}
	return out
}

func show(v any) string {
	if b, ok := v.(json.RawMessage); ok {
		return fmt.Sprintf("%q", b)
	}
	if p, ok := v.(*intake.Subject); ok && p != nil {
		return fmt.Sprintf("&%+v", *p)
	}
	return fmt.Sprintf("%#v", v)
}
