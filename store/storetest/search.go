package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// searchIndexer is a store whose search index follows its writes in the
// background: the suite searches before and after it catches up, and must
// find the same either way.
type searchIndexer interface {
	IndexSearch(ctx context.Context) (int, error)
}

// searched is a message settled with one event, for the search suite.
type searched struct {
	msg *intake.Message
	evt intake.Event
}

// settleOne ingests body at `at` and settles it processed with one event of
// typ carrying data, created at `at`.
func (f fixture) settleOne(t *testing.T, s intake.Store, body, typ, data string, at time.Time) searched {
	t.Helper()
	m := f.ingest(t, s, body, at)
	c := claimOne(t, s, at)
	e := f.event(m, "evt_"+m.ID)
	e.Type, e.Data, e.CreatedAt = typ, json.RawMessage(data), at
	st := processed(c, identity(m, "evt_"+m.ID), e)
	st.ProviderEventID = e.ProviderEventID
	if _, err := s.SettleMessage(context.Background(), at, st); err != nil {
		t.Fatal(err)
	}
	return searched{msg: m, evt: e}
}

func testSearch(t *testing.T, s intake.Store) {
	ctx := context.Background()
	acme, other := newFixture(t, s, "acme"), newFixture(t, s, "other")
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	paid, failed := "stripe.invoice.paid", "stripe.charge.failed"
	r1 := acme.settleOne(t, s, `{"note":"Refund requested by Ann"}`, paid,
		`{"id":"evt_1","customer":{"id":"cus_1","email":"ann@example.com"},"amount":1200,"tags":["vip","eu"],`+
			`"lines":[{"sku":"A-1","qty":2},{"sku":"B-2","qty":1}]}`, at(1))
	r2 := acme.settleOne(t, s, `plain text: invoice for ACME`, paid, `{"id":"evt_2","customer":{"id":"cus_2"},"amount":"1200","tags":["eu"]}`, at(2))
	r3 := acme.settleOne(t, s, `{"note":"refund DENIED"}`, failed,
		`{"id":"evt_3","customer":{"id":"cus_1"},"amount":1200.0,"failure":"Card Declined"}`, at(3))
	r4 := acme.settleOne(t, s, "\xff\xfe refund+later \xc3\xa9t\xc3\xa9", paid, `{"id":"evt_4","customer":{"id":"cus_10"},"amount":12}`, at(4))
	r5 := other.settleOne(t, s, `refund for another org`, paid, `{"customer":{"id":"cus_1"},"amount":1200}`, at(5))
	// The third event goes to no consumer; the others stay pending.
	for _, c := range claimEvents(t, s, at(6)) {
		if c.Event.ID == r3.evt.ID {
			if _, err := s.FanOut(ctx, at(6), intake.FanOut{EventID: c.Event.ID, Attempt: c.Attempt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	queued := acme.ingest(t, s, `refund queued, not processed yet`, at(7))

	scope := intake.Scope{OrgID: acme.org.ID}
	events := func(sc intake.Scope, f intake.EventFilter) []string {
		t.Helper()
		page, err := s.ListEvents(ctx, sc, f)
		if err != nil {
			t.Fatalf("events %+v: %v", f, err)
		}
		var ids []string
		for _, e := range page.Items {
			ids = append(ids, e.ID)
		}
		n, err := s.CountEvents(ctx, sc, f)
		if err != nil || (f.Limit == 0 && f.Cursor == "" && n != len(ids)) {
			t.Fatalf("counted %d events (%v), listed %d for %+v", n, err, len(ids), f)
		}
		return ids
	}
	messages := func(sc intake.Scope, f intake.MessageFilter) []string {
		t.Helper()
		page, err := s.ListMessages(ctx, sc, f)
		if err != nil {
			t.Fatalf("messages %+v: %v", f, err)
		}
		var ids []string
		for _, m := range page.Items {
			ids = append(ids, m.ID)
		}
		n, err := s.CountMessages(ctx, sc, f)
		if err != nil || (f.Limit == 0 && n != len(ids)) {
			t.Fatalf("counted %d messages (%v), listed %d for %+v", n, err, len(ids), f)
		}
		return ids
	}
	search := func(match string, words ...string) intake.Search {
		t.Helper()
		m, err := intake.ParseMatch(match)
		if err != nil {
			t.Fatal(err)
		}
		return intake.Search{Match: m, Words: words}
	}
	want := func(what string, got []string, want ...searched) {
		t.Helper()
		var ids []string
		for _, w := range want {
			ids = append(ids, w.evt.ID)
		}
		if !slices.Equal(got, ids) {
			t.Errorf("%s: events %v, want %v (newest first)", what, got, ids)
		}
	}
	wantMessages := func(what string, got []string, want ...*intake.Message) {
		t.Helper()
		var ids []string
		for _, m := range want {
			ids = append(ids, m.ID)
		}
		if !slices.Equal(got, ids) {
			t.Errorf("%s: messages %v, want %v (newest first)", what, got, ids)
		}
	}

	check := func(pass string) {
		// match: nested objects match partially; an array holds the
		// elements asked for, each in one element of its own; numbers
		// match by value and never a string.
		for _, c := range []struct {
			match string
			want  []searched
		}{
			{`{"customer":{"id":"cus_1"}}`, []searched{r3, r1}},
			{`{"customer":{"id":"cus_1"},"tags":["vip"]}`, []searched{r1}},
			{`{"tags":["eu"]}`, []searched{r2, r1}},
			{`{"tags":"eu"}`, nil},
			{`{"lines":[{"sku":"B-2"}]}`, []searched{r1}},
			{`{"lines":[{"sku":"B-2","qty":2}]}`, nil},
			{`{"amount":1200}`, []searched{r3, r1}},
			{`{"amount":"1200"}`, []searched{r2}},
			{`{"customer":{"id":"cus_9"}}`, nil},
			{`{"customer":{"id":"CUS_1"}}`, nil},
			{`{"customer":{"email":"ann@example.com"},"failure":null}`, nil},
		} {
			want(pass+" match "+c.match, events(scope, intake.EventFilter{Search: search(c.match)}), c.want...)
		}
		// q: every word, in any case, anywhere in the data; cus_1 is
		// inside cus_10 too.
		want(pass+" q CUS_1", events(scope, intake.EventFilter{Search: search("", "CUS_1")}), r4, r3, r1)
		want(pass+" q declined card", events(scope, intake.EventFilter{Search: search("", "declined", "card")}), r3)
		want(pass+" q declined cus_2", events(scope, intake.EventFilter{Search: search("", "declined", "cus_2")}))
		want(pass+" q match", events(scope, intake.EventFilter{Search: search(`{"amount":1200}`, "vip")}), r1)
		// Combined with the list's filters, its time range and its cursor;
		// staff see every org, an org its own.
		want(pass+" type and match", events(scope, intake.EventFilter{Type: paid, Search: search(`{"amount":1200}`)}), r1)
		want(pass+" state and q", events(scope, intake.EventFilter{State: intake.EventNoConsumer, Search: search("", "cus_1")}), r3)
		want(pass+" since", events(scope, intake.EventFilter{Since: at(3), Search: search("", "cus_1")}), r4, r3)
		want(pass+" since and until", events(scope, intake.EventFilter{Since: at(1), Until: at(3), Search: search(`{"customer":{"id":"cus_1"}}`)}), r1)
		want(pass+" another org", events(intake.Scope{OrgID: other.org.ID}, intake.EventFilter{Search: search(`{"customer":{"id":"cus_1"}}`)}), r5)
		var paged []string
		cursor := ""
		for {
			page, err := s.ListEvents(ctx, intake.Scope{}, intake.EventFilter{Limit: 1, Cursor: cursor, Search: search(`{"customer":{"id":"cus_1"}}`)})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Items {
				paged = append(paged, e.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		want(pass+" staff, a page at a time", paged, r5, r3, r1)

		// Messages: q is their raw bodies', binary or not; match and type
		// are their events'.
		wantMessages(pass+" q refund", messages(scope, intake.MessageFilter{Search: search("", "refund")}), queued, r4.msg, r3.msg, r1.msg)
		wantMessages(pass+" q denied REFUND", messages(scope, intake.MessageFilter{Search: search("", "denied", "REFUND")}), r3.msg)
		wantMessages(pass+" q in data only", messages(scope, intake.MessageFilter{Search: search("", "cus_1")}))
		wantMessages(pass+" q été", messages(scope, intake.MessageFilter{Search: search("", "été", "later")}), r4.msg)
		wantMessages(pass+" state and q", messages(scope, intake.MessageFilter{State: intake.MessageQueued, Search: search("", "refund")}), queued)
		wantMessages(pass+" received window", messages(scope, intake.MessageFilter{Since: at(2), Until: at(4), Search: search("", "refund")}), r3.msg)
		wantMessages(pass+" match", messages(scope, intake.MessageFilter{Search: search(`{"customer":{"id":"cus_1"}}`)}), r3.msg, r1.msg)
		wantMessages(pass+" type", messages(scope, intake.MessageFilter{Type: failed}), r3.msg)
		wantMessages(pass+" type and match in one event", messages(scope, intake.MessageFilter{Type: paid, Search: search(`{"customer":{"id":"cus_1"}}`)}), r1.msg)
		wantMessages(pass+" match and q", messages(scope, intake.MessageFilter{Search: search(`{"customer":{"id":"cus_1"}}`, "ann")}), r1.msg)
		wantMessages(pass+" staff", messages(intake.Scope{}, intake.MessageFilter{Search: search("", "another")}), r5.msg)
		wantMessages(pass+" another org's", messages(scope, intake.MessageFilter{Search: search("", "another")}))
	}
	check("as written:")
	if ix, ok := s.(searchIndexer); ok {
		if _, err := ix.IndexSearch(ctx); err != nil {
			t.Fatal(err)
		}
		check("indexed:")
	}

	// A body erased is not found, nor is a message with no body left.
	if _, err := s.EraseBodies(ctx, at(2), scope, acme.ep.ID, at(1), at(2)); err != nil {
		t.Fatal(err)
	}
	if ix, ok := s.(searchIndexer); ok {
		if _, err := ix.IndexSearch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantMessages("after erasure", messages(scope, intake.MessageFilter{Search: search("", "refund")}), queued, r4.msg, r3.msg)
}

// testSearchWordsMatchOnlyThemselves: q's words are text, not patterns. A
// store that searches with LIKE must escape its wildcards, or e_t finds
// evt and 50% finds 500.
func testSearchWordsMatchOnlyThemselves(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	scope := intake.Scope{OrgID: f.org.ID}
	literal := f.settleOne(t, s, `code e_t at 50%`, "stripe.invoice.paid", `{"code":"e_t","rate":"50%"}`, t0)
	alike := f.settleOne(t, s, `code evt at 500`, "stripe.invoice.paid", `{"code":"evt","rate":"500"}`, t0.Add(time.Minute))
	check := func(pass string) {
		for _, c := range []struct {
			word string
			want searched
		}{{"e_t", literal}, {"50%", literal}, {"evt", alike}} {
			events, err := s.ListEvents(ctx, scope, intake.EventFilter{Search: intake.Search{Words: []string{c.word}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(events.Items) != 1 || events.Items[0].ID != c.want.evt.ID {
				t.Errorf("%s events q %s: found %d events, want only %s", pass, c.word, len(events.Items), c.want.evt.Data)
			}
			messages, err := s.ListMessages(ctx, scope, intake.MessageFilter{Search: intake.Search{Words: []string{c.word}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(messages.Items) != 1 || messages.Items[0].ID != c.want.msg.ID {
				t.Errorf("%s messages q %s: found %d messages, want only the body %q", pass, c.word, len(messages.Items), c.want.msg.Body)
			}
		}
	}
	check("as written:")
	if ix, ok := s.(searchIndexer); ok {
		if _, err := ix.IndexSearch(ctx); err != nil {
			t.Fatal(err)
		}
		check("indexed:")
	}
}
