package control_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func TestAListQueryIsReadOnceAndAnUnknownOrRepeatedParameterRefused(t *testing.T) {
	f, err := control.EventQuery(url.Values{"match": {`{"customer":{"id":"cus_1"}}`}, "q": {" refund  Card "}, "type": {"stripe.charge.failed"},
		"since": {"2026-03-01T00:00:00+01:00"}, "limit": {"20"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Search.Match.String() != `{"customer":{"id":"cus_1"}}` || strings.Join(f.Search.Words, ",") != "refund,Card" ||
		f.Type != "stripe.charge.failed" || f.Limit != 20 || f.Since.Format("2006-01-02T15:04Z07:00") != "2026-02-28T23:00Z" {
		t.Fatalf("filter = %+v", f)
	}
	for _, c := range []struct {
		q    url.Values
		want string
	}{
		{url.Values{"zebra": {"1"}}, `unknown query parameter "zebra"`},
		{url.Values{"endpoint_id": {intake.NewID()}}, `unknown query parameter "endpoint_id"`}, // a messages filter
		{url.Values{"type": {"a", "b"}}, "type is given 2 times"},
		{url.Values{"match": {"cus_1"}}, "match must be a JSON object"},
		{url.Values{"until": {"tomorrow"}}, "until must be an RFC 3339 time"},
		{url.Values{"limit": {"0"}}, "limit must be"},
	} {
		_, err := control.EventQuery(c.q)
		if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), c.want) {
			t.Errorf("EventQuery(%s) = %v, want invalid: %s", c.q.Encode(), err, c.want)
		}
	}
	if _, err := control.MessageQuery(url.Values{"endpoint_id": {intake.NewID()}, "provider_event_id": {"evt_1"}, "q": {"x"}}); err != nil {
		t.Fatalf("a messages query: %v", err)
	}
	if err := control.CheckParams(url.Values{"cursor": {"x"}}); err == nil || !strings.Contains(err.Error(), "takes none") {
		t.Fatalf("a list without parameters: %v", err)
	}
}

func TestABulkReplayOfASearchReplaysWhatItFindsOnce(t *testing.T) {
	e := setup(t)
	app := e.consumer(t, "github.issues.opened")
	wanted := e.receive(t, "d-wanted")
	e.receive(t, "d-other")
	e.settle(t)
	sc := intake.Scope{OrgID: e.org.ID}
	search, err := control.ParseSearch("", "I_d-wanted")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.ctl.ReplayWhere(context.Background(), as(sc), intake.MessageFilter{Search: search}, false)
	if err != nil || res.Count != 1 {
		t.Fatalf("replayed %+v (%v), want 1", res, err)
	}
	e.settle(t)
	app.mu.Lock()
	defer app.mu.Unlock()
	if len(app.got) != 3 || !app.got[2].Replay || app.got[2].MessageID == wanted {
		t.Fatalf("the consumer got %d events; the third should be the replay of %s", len(app.got), wanted)
	}
	// A second replay of the same search finds the original again, never
	// its replay: a bulk replay replays originals.
	if res, err := e.ctl.ReplayWhere(context.Background(), as(sc), intake.MessageFilter{Search: search}, false); err != nil || res.Count != 1 {
		t.Fatalf("replayed again %+v (%v), want 1", res, err)
	}
}

func TestABulkReplayPastTheBulkMaximumIsRefusedWhole(t *testing.T) {
	e := setup(t)
	var wg sync.WaitGroup
	for i := range 11 {
		wg.Go(func() { e.receive(t, fmt.Sprint("d-", i)) })
	}
	wg.Wait()
	sc := intake.Scope{OrgID: e.org.ID}
	small := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, BulkMax: 10})
	_, err := small.ReplayWhere(context.Background(), as(sc), intake.MessageFilter{State: intake.MessageQueued}, false)
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), "selects 11 messages") ||
		!strings.Contains(intake.ErrorMessage(err), "confirm") {
		t.Fatalf("a replay of 11 past a maximum of 10: %v, want EINVALID naming the count and confirm", err)
	}
	if n, _ := e.store.CountMessages(context.Background(), sc, intake.MessageFilter{}); n != 11 {
		t.Fatalf("%d messages after a refused replay, want 11", n)
	}
}
