package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The issues cases (DESIGN §20): the settles write an issue in the
// transaction that saw its failure, and operators read and move it.

var issueTests = []struct {
	name string
	fn   func(*testing.T, intake.Store)
}{
	{"OnceAFailedDeliveryCanBeReadItsIssueCountsIt", testIssueCountsFailedDeliveries},
	{"AnIssueResolvesOnSuccessAndReopensAsTheSameIssue", testIssueResolvesAndReopens},
	{"AnIssueIsMovedByHandOnlyAsAllowedAndAudited", testIssueStatusByHand},
	{"AnUnverifiedRequestOpensItsConnectionsIssue", testRequestIssue},
	{"ListsOfIssuesFilterAndPage", testIssueLists},
	{"BacklogsAreReadAndTheirIssuesWritten", testBacklogs},
	{"AFilterErrorAtTheFanOutOpensTheConsumersRuleIssue", testFilterErrorIssue},
}

// issueTopics are the issue notices written, in order of topic.
func issueTopics(t *testing.T, s intake.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for topic, n := range notices(t, s) {
		if strings.HasPrefix(topic, "issue.") {
			out[topic] = n
		}
	}
	return out
}

// failingCalls routes n events to a new consumer and fails one call of
// each at t0 (the consumer answers 503).
func (f fixture) failingCalls(t *testing.T, s intake.Store, n int) (intake.Consumer, []intake.Event) {
	t.Helper()
	c := f.consumer(t, s, "billing", intake.Controls{Retry: intake.RetryPolicy{Attempts: 10}})
	events := f.routed(t, s, n, func(intake.Event) []intake.FanOutRoute { return to(c) })
	for _, cl := range claimRoutes(t, s, t0, 100) {
		settleRoute(t, s, t0, cl, intake.DeliveryRetry)
	}
	return c, events
}

func onlyIssue(t *testing.T, s intake.Store, sc intake.Scope, q intake.IssueQuery) intake.Issue {
	t.Helper()
	p, err := s.ListIssues(context.Background(), sc, q)
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("issues %+v %v, want one", p.Items, err)
	}
	return p.Items[0]
}

func testIssueCountsFailedDeliveries(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	c, events := f.failingCalls(t, s, 3)
	// Read the failed delivery, then its issue: it counts it.
	ds, err := s.Deliveries(ctx, sc, events[2].ID)
	if err != nil || len(ds) != 1 || !ds[0].Failed() {
		t.Fatalf("deliveries %+v %v", ds, err)
	}
	i := onlyIssue(t, s, sc, intake.IssueQuery{Status: intake.IssueOpen})
	want := intake.IssueID(f.org.ID, intake.IssueDelivery, c.ID, "consumer answered 5xx")
	if i.ID != want || i.Kind != intake.IssueDelivery || i.ConsumerID != c.ID || i.SubjectName != "billing" || i.Count != 3 || i.Events != 3 ||
		i.Cause != "consumer answered 5xx" || i.LastError != "503 Service Unavailable" || !i.FirstSeenAt.Equal(t0) || !i.OpenedAt.Equal(t0) ||
		!i.LastSeenAt.Equal(t0) || !slices.ContainsFunc(events, func(e intake.Event) bool { return e.ID == i.SampleEventID }) {
		t.Fatalf("issue %+v", i)
	}
	got, err := s.Issue(ctx, sc, i.ID)
	if err != nil || got != i {
		t.Fatalf("issue %+v %v, want %+v", got, err, i)
	}
	if n, err := s.CountOpenIssues(ctx, sc); err != nil || n != 1 {
		t.Fatalf("open issues %d %v", n, err)
	}
	if topics := issueTopics(t, s); topics[intake.NoticeIssueOpened] != 1 || len(topics) != 1 {
		t.Fatalf("issue notices %v, want one opened", topics)
	}
	// A second failure of a held event counts the call, not the event.
	now := t0.Add(time.Hour)
	cl := claimRoutes(t, s, now, 1)
	settleRoute(t, s, now, cl[0], intake.DeliveryRetry)
	i, _ = s.Issue(ctx, sc, i.ID)
	if i.Count != 4 || i.Events != 3 || !i.LastSeenAt.Equal(now) {
		t.Fatalf("issue %+v, want 4 calls over 3 events, last seen %v", i, now)
	}
	// Its items: the events, the last failed first, a page at a time.
	var seen []intake.IssueItem
	cursor := ""
	for {
		p, err := s.IssueItems(ctx, sc, i.ID, intake.IssueItemsQuery{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, p.Items...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 3 || seen[0].EventID != cl[0].Event.ID || !seen[0].At.Equal(now) || seen[1].At.After(seen[0].At) {
		t.Fatalf("items %+v, want 3, the event failed last first", seen)
	}
	if _, err := s.IssueItems(ctx, sc, i.ID, intake.IssueItemsQuery{Cursor: "nonsense"}); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a bad cursor: %v, want EINVALID", err)
	}
	// Another org sees none of it.
	other := newFixture(t, s, "other")
	osc := intake.Scope{OrgID: other.org.ID}
	if _, err := s.Issue(ctx, osc, i.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org's issue: %v, want ENOTFOUND", err)
	}
	if _, err := s.IssueItems(ctx, osc, i.ID, intake.IssueItemsQuery{}); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org's issue items: %v, want ENOTFOUND", err)
	}
	if p, err := s.ListIssues(ctx, osc, intake.IssueQuery{}); err != nil || len(p.Items) != 0 {
		t.Fatalf("another org lists %+v %v", p.Items, err)
	}
	if n, err := s.CountOpenIssues(ctx, osc); err != nil || n != 0 {
		t.Fatalf("another org counts %d open %v", n, err)
	}
	if _, err := s.Issue(ctx, sc, intake.NewID()); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("an unknown issue: %v, want ENOTFOUND", err)
	}
}

func testIssueResolvesAndReopens(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	_, events := f.failingCalls(t, s, 3)
	opened := onlyIssue(t, s, sc, intake.IssueQuery{})
	// The first call of the next hour succeeds: the issue resolves.
	now := t0.Add(time.Hour)
	cls := claimRoutes(t, s, now, 100)
	if len(cls) != 3 {
		t.Fatalf("claimed %d, want 3", len(cls))
	}
	settleRoute(t, s, now, cls[0], intake.DeliveryHandled)
	i, _ := s.Issue(ctx, sc, opened.ID)
	if i.Status != intake.IssueResolved || !i.ResolvedAt.Equal(now) || i.Count != 3 {
		t.Fatalf("issue %+v, want resolved at %v", i, now)
	}
	if n, _ := s.CountOpenIssues(ctx, sc); n != 0 {
		t.Fatalf("%d open after the success", n)
	}
	// The cause returns: the same issue reopens and counts on.
	later := now.Add(time.Minute)
	settleRoute(t, s, later, cls[1], intake.DeliveryRetry)
	i, _ = s.Issue(ctx, sc, opened.ID)
	if i.Status != intake.IssueOpen || !i.OpenedAt.Equal(later) || !i.ResolvedAt.IsZero() || i.Count != 4 || i.Events != 3 ||
		!i.FirstSeenAt.Equal(t0) {
		t.Fatalf("issue %+v, want the same issue open again at %v, counting 4 over 3 events", i, later)
	}
	// Dismissed, it reopens too when the cause returns.
	if _, err := s.SetIssueStatus(ctx, sc, i.ID, intake.IssueDismissed, later); err != nil {
		t.Fatal(err)
	}
	settleRoute(t, s, later, cls[2], intake.DeliveryRetry)
	if i, _ = s.Issue(ctx, sc, opened.ID); i.Status != intake.IssueOpen || i.Count != 5 {
		t.Fatalf("issue %+v, want reopened after its dismissal", i)
	}
	topics := issueTopics(t, s)
	if topics[intake.NoticeIssueOpened] != 1 || topics[intake.NoticeIssueResolved] != 1 || topics[intake.NoticeIssueReopened] != 2 {
		t.Fatalf("issue notices %v", topics)
	}
	un, _ := s.UnsentNotices(ctx, 100)
	for _, n := range un {
		if strings.HasPrefix(n.Topic, "issue.") && (n.Subject != opened.ID || !strings.Contains(n.Detail, "billing")) {
			t.Fatalf("notice %+v: want the issue as subject and the consumer by name", n)
		}
	}
	_ = events
}

func testIssueStatusByHand(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	f.failingCalls(t, s, 1)
	i := onlyIssue(t, s, sc, intake.IssueQuery{})
	at := t0.Add(time.Minute)
	audit := func(action string) intake.AuditEntry {
		return intake.AuditEntry{ID: intake.NewID(), OrgID: f.org.ID, Actor: "op", Action: action, TargetType: "issue", TargetID: i.ID, At: at}
	}
	got, err := s.SetIssueStatus(ctx, sc, i.ID, intake.IssueAcknowledged, at, audit("issue.acknowledge"))
	if err != nil || got.Status != intake.IssueAcknowledged || !got.AcknowledgedAt.Equal(at) {
		t.Fatalf("acknowledged %+v %v", got, err)
	}
	if p, _ := s.ListIssues(ctx, sc, intake.IssueQuery{Status: intake.IssueOpen}); len(p.Items) != 0 {
		t.Fatalf("?status=open lists an acknowledged issue: %+v", p.Items)
	}
	if n, _ := s.CountOpenIssues(ctx, sc); n != 0 {
		t.Fatalf("an acknowledged issue counts as open: %d", n)
	}
	if got, err = s.SetIssueStatus(ctx, sc, i.ID, intake.IssueOpen, at); err != nil || got.Status != intake.IssueOpen || !got.AcknowledgedAt.IsZero() {
		t.Fatalf("reopened by hand %+v %v", got, err)
	}
	if _, err := s.SetIssueStatus(ctx, sc, i.ID, intake.IssueResolved, at, audit("issue.resolve")); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("resolved by hand: %v, want EINVALID", err)
	}
	if _, err := s.SetIssueStatus(ctx, sc, i.ID, intake.IssueDismissed, at, audit("issue.dismiss")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetIssueStatus(ctx, sc, i.ID, intake.IssueAcknowledged, at); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a dismissed issue acknowledged: %v, want EINVALID", err)
	}
	other := newFixture(t, s, "other")
	if _, err := s.SetIssueStatus(ctx, intake.Scope{OrgID: other.org.ID}, i.ID, intake.IssueOpen, at); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org's issue: %v, want ENOTFOUND", err)
	}
	if got, _ := s.Issue(ctx, sc, i.ID); got.Status != intake.IssueDismissed {
		t.Fatalf("issue %+v, want dismissed", got)
	}
	// Each move that happened is audited; the refused one is not.
	if a := auditActions(t, s, f.org.ID); a["issue.acknowledge"] != 1 || a["issue.dismiss"] != 1 || a["issue.resolve"] != 0 {
		t.Fatalf("audit %v", a)
	}
}

func testRequestIssue(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	var forged []string
	for _, body := range []string{`{"id":"f1"}`, `{"id":"f2"}`} {
		f.ingest(t, s, body, t0)
		c := claimOne(t, s, t0)
		forged = append(forged, c.Message.ID)
		if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: intake.MessageIgnored,
			Outcome: intake.OutcomeSignature, ErrorMessage: "signature: signature does not verify"}); err != nil {
			t.Fatal(err)
		}
	}
	i := onlyIssue(t, s, sc, intake.IssueQuery{Kind: intake.IssueRequest, ConnectionID: f.conn.ID})
	if i.ConnectionID != f.conn.ID || i.ConsumerID != "" || i.SubjectName != f.conn.Name || i.Count != 2 || i.Events != 2 ||
		i.Cause != intake.CauseSignature || i.SampleMessageID != forged[1] || i.Status != intake.IssueOpen {
		t.Fatalf("issue %+v", i)
	}
	p, err := s.IssueItems(ctx, sc, i.ID, intake.IssueItemsQuery{})
	if err != nil || len(p.Items) != 2 || p.Items[0].MessageID == "" || p.Items[0].EventID != "" {
		t.Fatalf("items %+v %v", p.Items, err)
	}
	now := t0.Add(time.Minute)
	f.ingest(t, s, `{"id":"ok"}`, now)
	if _, err := s.SettleMessage(ctx, now, processed(claimOne(t, s, now), nil)); err != nil {
		t.Fatal(err)
	}
	if i, _ = s.Issue(ctx, sc, i.ID); i.Status != intake.IssueResolved {
		t.Fatalf("issue %+v, want resolved by a verified request", i)
	}
}

func testIssueLists(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	var consumers []intake.Consumer
	for k, name := range []string{"a", "b", "c"} {
		c := f.consumer(t, s, name, intake.Controls{})
		consumers = append(consumers, c)
		e := f.eventAt(t, s, t0)
		at := t0.Add(time.Duration(k) * time.Minute)
		for _, cl := range fanOut(t, s, e, at, time.Minute, to(c)) {
			settleRoute(t, s, at, cl, intake.DeliveryRetry)
		}
	}
	var ids []string
	cursor := ""
	for {
		p, err := s.ListIssues(ctx, sc, intake.IssueQuery{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range p.Items {
			ids = append(ids, i.ConsumerID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(ids) != 3 || ids[0] != consumers[2].ID || ids[2] != consumers[0].ID {
		t.Fatalf("issues of consumers %v, want the last seen first", ids)
	}
	if i := onlyIssue(t, s, sc, intake.IssueQuery{ConsumerID: consumers[1].ID, Kind: intake.IssueDelivery}); i.SubjectName != "b" {
		t.Fatalf("issue %+v", i)
	}
	if p, _ := s.ListIssues(ctx, sc, intake.IssueQuery{Kind: intake.IssueRule}); len(p.Items) != 0 {
		t.Fatalf("rule issues %+v", p.Items)
	}
	if _, err := s.ListIssues(ctx, sc, intake.IssueQuery{Cursor: "x"}); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a bad cursor: %v", err)
	}
	// A deleted consumer's issue leaves the lists and the count.
	if err := s.Delete(ctx, sc, intake.DeleteConsumer, consumers[0].ID, t0); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.ListIssues(ctx, sc, intake.IssueQuery{}); len(p.Items) != 2 {
		t.Fatalf("issues %+v, want the deleted consumer's left out", p.Items)
	}
	if n, _ := s.CountOpenIssues(ctx, sc); n != 2 {
		t.Fatalf("%d open, want 2", n)
	}
}

func testBacklogs(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "slow", intake.Controls{})
	f.routed(t, s, 2, func(intake.Event) []intake.FanOutRoute { return to(c) })
	if in, err := s.Backlogs(ctx, t0); err != nil || len(in.Late) != 0 {
		t.Fatalf("late at t0: %+v %v", in.Late, err)
	}
	in, err := s.Backlogs(ctx, t0.Add(15*time.Minute))
	if err != nil || len(in.Late) != 1 || in.Late[0].ConsumerID != c.ID || in.Late[0].Name != "slow" || !in.Late[0].OldestAt.Equal(t0) ||
		in.Late[0].OrgID != f.org.ID {
		t.Fatalf("late %+v %v", in.Late, err)
	}
	now := t0.Add(16 * time.Minute)
	ws, ns := intake.DecideBacklogIssues(in, now, 15*time.Minute)
	if err := s.WriteIssues(ctx, ws, ns); err != nil {
		t.Fatal(err)
	}
	if in, err = s.Backlogs(ctx, now.Add(-15*time.Minute)); err != nil || len(in.Issues) != 1 || in.Issues[0].Kind != intake.IssueBacklog {
		t.Fatalf("backlog issues %+v %v", in.Issues, err)
	}
	i := onlyIssue(t, s, intake.Scope{OrgID: f.org.ID}, intake.IssueQuery{Kind: intake.IssueBacklog})
	if i.ConsumerID != c.ID || i.Status != intake.IssueOpen || i.Count != 1 {
		t.Fatalf("issue %+v", i)
	}
	if topics := issueTopics(t, s); topics[intake.NoticeIssueOpened] != 1 {
		t.Fatalf("notices %v", topics)
	}
}

func testFilterErrorIssue(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	c := f.consumer(t, s, "crm", intake.Controls{})
	e := f.eventAt(t, s, t0)
	route := filteredRoute(e, c)
	route.Delivery.Error = intake.FilterErrorPrefix + "no such key: customer"
	fanOut(t, s, e, t0, 0, []intake.FanOutRoute{route})
	i := onlyIssue(t, s, sc, intake.IssueQuery{Kind: intake.IssueRule})
	if i.ConsumerID != c.ID || i.SubjectName != "crm" || i.Cause != intake.CauseFilterError || i.Count != 1 || i.Events != 1 ||
		i.SampleEventID != e.ID || i.LastError != route.Delivery.Error {
		t.Fatalf("issue %+v", i)
	}
	// The filter runs on the next event: the issue resolves.
	next := f.eventAt(t, s, t0)
	fanOut(t, s, next, t0, 0, to(c))
	if i, _ = s.Issue(ctx, sc, i.ID); i.Status != intake.IssueResolved {
		t.Fatalf("issue %+v, want resolved by a filter that ran", i)
	}
}
