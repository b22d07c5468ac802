package intake

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// otherNotices are the notices that are not about issues.
func otherNotices(ns []Notice) []Notice {
	var out []Notice
	for _, n := range ns {
		if !strings.HasPrefix(n.Topic, "issue.") {
			out = append(out, n)
		}
	}
	return out
}

func issueNotices(ns []Notice) []string {
	var out []string
	for _, n := range ns {
		if strings.HasPrefix(n.Topic, "issue.") {
			out = append(out, n.Topic)
		}
	}
	return out
}

func TestIssueCauseNamesEachFailureOnce(t *testing.T) {
	cases := []struct {
		d     Delivery
		kind  IssueKind
		cause string
	}{
		{Delivery{StatusCode: 500, Error: "consumer answered 500"}, IssueDelivery, "consumer answered 5xx"},
		{Delivery{StatusCode: 503, Error: "consumer answered 503"}, IssueDelivery, "consumer answered 5xx"},
		{Delivery{StatusCode: 404, Error: "consumer answered 404"}, IssueDelivery, "consumer answered 4xx"},
		{Delivery{StatusCode: 410, Error: "the consumer answered 410 Gone: it is disabled"}, IssueDelivery, "consumer answered 4xx"},
		{Delivery{Error: "timeout"}, IssueDelivery, "timeout"},
		{Delivery{Error: "connection refused"}, IssueDelivery, "connection refused"},
		{Delivery{Error: "TLS certificate expired"}, IssueDelivery, "TLS certificate expired"},
		{Delivery{Error: "refused by the consumer address policy"}, IssueDelivery, "refused by the consumer address policy"},
		{Delivery{Error: "redis redis://cache:6379: connection refused"}, IssueDelivery, "connection refused"},
		{Delivery{Error: "redis redis://cache:6379 did not answer within 5s"}, IssueDelivery, "timeout"},
		{Delivery{Error: `kafka [k:9092] refused the record to topic "t": NOT_LEADER_FOR_PARTITION`}, IssueDelivery, "broker refused"},
		{Delivery{Error: `kafka [k:9092] did not acknowledge the record to topic "t" within 5s`}, IssueDelivery, "timeout"},
		{Delivery{Error: "transform_error: no template for stripe.invoice.paid"}, IssueRule, CauseTransformError},
		{Delivery{Error: "filter_error: no such key: customer"}, IssueRule, CauseFilterError},
		{Delivery{Error: "something nobody named"}, IssueDelivery, "delivery failed"},
	}
	for _, c := range cases {
		if kind, cause := IssueCause(c.d); kind != c.kind || cause != c.cause {
			t.Errorf("IssueCause(%q, %d) = %s %q, want %s %q", c.d.Error, c.d.StatusCode, kind, cause, c.kind, c.cause)
		}
	}
}

// answered is a call of event to c1 that the consumer answered status.
func answered(event string, attempt, status int, at time.Time) TimedRouteSettlement {
	s := call(event, "c1", attempt, DeliveryHandled)
	s.Now = at
	s.Delivery.StatusCode = status
	if status >= 300 {
		s.Delivery.Outcome, s.Delivery.Error = DeliveryRetry, "consumer answered "+strconv.Itoa(status)
	}
	return s
}

// routesRead is a read of events e1…eN, each with one leased route to c1
// (named "billing"), and the consumer's issues.
func routesRead(n int, issues []Issue, items map[IssueItemKey]bool) RouteSettleRead {
	r := RouteSettleRead{Events: map[string]EventState{}, Routes: map[RouteKey]Route{}, Counts: map[string]RouteCounts{},
		Consumers:     map[string]ConsumerLane{"c1": {Enabled: true, Lane: Lane{ConsumerID: "c1", OrgID: org}}},
		ConsumerNames: map[string]string{"c1": "billing"}, Issues: issues, IssueItems: items}
	for i := 1; i <= n; i++ {
		e := "e" + string(rune('0'+i))
		r.Events[e], r.Routes[RouteKey{e, "c1"}], r.Counts[e] = EventPending, leasedRoute(e, "c1", 0), RouteCounts{Total: 1, Waiting: 1}
	}
	return r
}

func TestDecideRouteSettlementsIssues(t *testing.T) {
	fiveXX := IssueID(org, IssueDelivery, "c1", "consumer answered 5xx")
	at := func(status IssueStatus) []Issue {
		return []Issue{{ID: fiveXX, OrgID: org, Kind: IssueDelivery, Status: status, ConsumerID: "c1", Cause: "consumer answered 5xx",
			Count: 4, Events: 2, FirstSeenAt: t0.Add(-time.Hour), OpenedAt: t0.Add(-time.Hour)}}
	}
	later := t0.Add(time.Second)
	cases := []struct {
		name  string
		read  RouteSettleRead
		batch []TimedRouteSettlement
		// want: the issue's status, its counts as decided, what the
		// write adds, and the issue notices.
		status              IssueStatus
		count, events, adds int64
		notices             []string
	}{{
		name: "a first failure opens the issue, noticed", read: routesRead(1, nil, nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0)},
		status: IssueOpen, count: 1, events: 1, adds: 1, notices: []string{NoticeIssueOpened},
	}, {
		name: "failures of one cause in a batch count in one issue", read: routesRead(2, nil, nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0), answered("e2", 1, 503, later)},
		status: IssueOpen, count: 2, events: 2, adds: 2, notices: []string{NoticeIssueOpened},
	}, {
		name: "an open issue counts a later failure without a notice", read: routesRead(1, at(IssueOpen), nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0)},
		status: IssueOpen, count: 5, events: 3, adds: 1,
	}, {
		name: "an event the issue holds already is not counted again", read: routesRead(1, at(IssueOpen), map[IssueItemKey]bool{{fiveXX, "e1"}: true}),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0)},
		status: IssueOpen, count: 5, events: 2, adds: 1,
	}, {
		name: "an acknowledged issue keeps counting, silently", read: routesRead(1, at(IssueAcknowledged), nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0)},
		status: IssueAcknowledged, count: 5, events: 3, adds: 1,
	}, {
		name: "a success resolves the open issue, noticed", read: routesRead(1, at(IssueOpen), nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 200, t0)},
		status: IssueResolved, count: 4, events: 2, notices: []string{NoticeIssueResolved},
	}, {
		name: "a success resolves an acknowledged issue, noticed", read: routesRead(1, at(IssueAcknowledged), nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 200, t0)},
		status: IssueResolved, count: 4, events: 2, notices: []string{NoticeIssueResolved},
	}, {
		name: "a success leaves a dismissed issue as it is", read: routesRead(1, at(IssueDismissed), nil),
		batch: []TimedRouteSettlement{answered("e1", 1, 200, t0)},
	}, {
		name: "the cause returning reopens a resolved issue as the same issue", read: routesRead(1, at(IssueResolved), nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0)},
		status: IssueOpen, count: 5, events: 3, adds: 1, notices: []string{NoticeIssueReopened},
	}, {
		name: "the cause returning reopens a dismissed issue", read: routesRead(1, at(IssueDismissed), nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0)},
		status: IssueOpen, count: 5, events: 3, adds: 1, notices: []string{NoticeIssueReopened},
	}, {
		name: "a batch sees the results before it: fail, succeed, fail again", read: routesRead(3, nil, nil),
		batch:  []TimedRouteSettlement{answered("e1", 1, 500, t0), answered("e2", 1, 200, later), answered("e3", 1, 500, later.Add(time.Second))},
		status: IssueOpen, count: 2, events: 2, adds: 2, notices: []string{NoticeIssueOpened, NoticeIssueResolved, NoticeIssueReopened},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := DecideRouteSettlements(c.read, c.batch)
			for i, err := range d.Errs {
				if err != nil {
					t.Fatalf("result %d: %v", i, err)
				}
			}
			if c.status == "" {
				if len(d.Issues) != 0 || len(d.Notices) != 0 {
					t.Fatalf("issues %+v notices %+v, want none", d.Issues, d.Notices)
				}
				return
			}
			if len(d.Issues) != 1 {
				t.Fatalf("issues %+v, want one", d.Issues)
			}
			w := d.Issues[0]
			if w.Issue.ID != fiveXX || w.Issue.Status != c.status || w.Issue.Count != c.count || w.Issue.Events != c.events || w.AddCount != c.adds {
				t.Fatalf("issue %+v (adds %d), want %s, count %d, events %d, adds %d", w.Issue, w.AddCount, c.status, c.count, c.events, c.adds)
			}
			if got := issueNotices(d.Notices); strings.Join(got, ",") != strings.Join(c.notices, ",") {
				t.Fatalf("notices %v, want %v", got, c.notices)
			}
			for _, n := range d.Notices {
				if strings.HasPrefix(n.Topic, "issue.") && (n.Subject != fiveXX || !strings.Contains(n.Detail, `"billing"`) ||
					!strings.Contains(n.Detail, "consumer answered 5xx")) {
					t.Fatalf("notice %+v: want the issue as subject, the consumer's name and the cause in its detail", n)
				}
			}
			if w.Issue.SubjectName != "billing" {
				t.Fatalf("subject name %q", w.Issue.SubjectName)
			}
		})
	}
}

func TestDecideRouteSettlementsTransformErrorIsARuleIssue(t *testing.T) {
	s := call("e1", "c1", 1, DeliveryRetry)
	s.Called, s.Delivery.Error = false, "transform_error: boom"
	d := DecideRouteSettlements(routesRead(1, nil, nil), []TimedRouteSettlement{s})
	if len(d.Issues) != 1 || d.Issues[0].Issue.Kind != IssueRule || d.Issues[0].Issue.Cause != CauseTransformError ||
		d.Issues[0].Issue.LastError != "transform_error: boom" || len(d.IssueItems) != 1 || d.IssueItems[0].EventID != "e1" {
		t.Fatalf("issues %+v items %+v", d.Issues, d.IssueItems)
	}
	rule := d.Issues[0].Issue
	// A call its transform let through resolves the rule issue, even one
	// the consumer failed.
	d = DecideRouteSettlements(routesRead(1, []Issue{rule}, nil), []TimedRouteSettlement{answered("e1", 1, 500, t0)})
	var kinds []string
	for _, w := range d.Issues {
		kinds = append(kinds, string(w.Issue.Kind)+":"+string(w.Issue.Status))
	}
	if strings.Join(kinds, ",") != "delivery:open,rule:resolved" {
		t.Fatalf("issues %v", kinds)
	}
}

func TestDecideRouteSettlementsTripCountsUnderTripped(t *testing.T) {
	r := routesRead(1, nil, nil)
	c := r.Consumers["c1"]
	c.Controls.BreakerFailures, c.Lane.Failures = 3, 2
	r.Consumers["c1"] = c
	d := DecideRouteSettlements(r, []TimedRouteSettlement{answered("e1", 1, 500, t0)})
	var causes []string
	for _, w := range d.Issues {
		causes = append(causes, w.Issue.Cause)
	}
	if strings.Join(causes, ",") != "consumer answered 5xx,tripped" {
		t.Fatalf("causes %v", causes)
	}
}

func TestDecideSettlementsRequestIssues(t *testing.T) {
	forged := func(id string) TimedSettlement {
		return TimedSettlement{Now: t0, Settlement: Settlement{MessageID: id, Attempt: 1, To: MessageIgnored, Outcome: OutcomeSignature,
			ErrorMessage: "signature: signature does not verify"}}
	}
	read := SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1), "m2": processing(1), "m3": processing(1)},
		ConnectionNames: map[string]string{processing(1).ConnectionID: "stripe live"}}
	d := DecideSettlements(read, []TimedSettlement{forged("m1"), forged("m2")})
	if len(d.Issues) != 1 || d.Issues[0].Issue.Kind != IssueRequest || d.Issues[0].Issue.ConnectionID != processing(1).ConnectionID ||
		d.Issues[0].Issue.Count != 2 || d.Issues[0].Issue.Events != 2 || d.Issues[0].Issue.SampleMessageID != "m2" || len(d.IssueItems) != 2 {
		t.Fatalf("issues %+v items %+v", d.Issues, d.IssueItems)
	}
	if n := issueNotices(d.Notices); len(n) != 1 || n[0] != NoticeIssueOpened {
		t.Fatalf("notices %v", n)
	}
	read.Issues = []Issue{d.Issues[0].Issue}
	ok := TimedSettlement{Now: t0, Settlement: Settlement{MessageID: "m3", Attempt: 1, To: MessageProcessed, Outcome: OutcomeNoEvents}}
	d = DecideSettlements(read, []TimedSettlement{ok})
	if len(d.Issues) != 1 || d.Issues[0].Issue.Status != IssueResolved || !d.Issues[0].Issue.ResolvedAt.Equal(t0) {
		t.Fatalf("issues %+v: a verified request resolves its connection's issue", d.Issues)
	}
}

func TestDecideBacklogIssuesOpensOnceAndResolves(t *testing.T) {
	late := ConsumerBacklog{OrgID: org, ConsumerID: "c1", Name: "billing", OldestAt: t0.Add(-time.Hour)}
	w, n := DecideBacklogIssues(BacklogRead{Late: []ConsumerBacklog{late}}, t0, 15*time.Minute)
	if len(w) != 1 || w[0].Issue.Kind != IssueBacklog || w[0].Issue.Status != IssueOpen || w[0].Issue.SubjectName != "billing" ||
		len(n) != 1 || n[0].Topic != NoticeIssueOpened {
		t.Fatalf("writes %+v notices %+v", w, n)
	}
	open := w[0].Issue
	if w, n := DecideBacklogIssues(BacklogRead{Late: []ConsumerBacklog{late}, Issues: []Issue{open}}, t0.Add(time.Minute), 15*time.Minute); len(w) != 0 || len(n) != 0 {
		t.Fatalf("writes %+v notices %+v: a backlog already open is left as it is", w, n)
	}
	w, n = DecideBacklogIssues(BacklogRead{Issues: []Issue{open}}, t0.Add(time.Minute), 15*time.Minute)
	if len(w) != 1 || w[0].Issue.Status != IssueResolved || len(n) != 1 || n[0].Topic != NoticeIssueResolved {
		t.Fatalf("writes %+v notices %+v", w, n)
	}
}

func TestCheckIssueStatusAllowsOnlyTheOperatorsMoves(t *testing.T) {
	allowed := map[[2]IssueStatus]bool{
		{IssueOpen, IssueAcknowledged}: true, {IssueAcknowledged, IssueOpen}: true, {IssueOpen, IssueDismissed}: true,
		{IssueAcknowledged, IssueDismissed}: true, {IssueOpen, IssueOpen}: true, {IssueAcknowledged, IssueAcknowledged}: true,
		{IssueDismissed, IssueDismissed}: true,
	}
	for _, from := range IssueStatuses {
		for _, to := range append(IssueStatuses, "closed", "") {
			err := CheckIssueStatus(from, to)
			if want := allowed[[2]IssueStatus{from, to}]; (err == nil) != want || err != nil && ErrorCode(err) != EINVALID {
				t.Errorf("%s → %q: %v, want allowed %v (else EINVALID)", from, to, err, want)
			}
		}
	}
}

func TestDecideFanOutFilterErrorsAreRuleIssues(t *testing.T) {
	e := newEvent("e1", "")
	e.Attempt = 1
	broken := &Delivery{ID: NewID(), EventID: "e1", ConsumerID: "c1", Outcome: DeliveryFiltered, Error: FilterErrorPrefix + "no such key: customer"}
	read := FanOutRead{Event: e, Leased: true, Consumers: map[string]ConsumerLane{"c1": {Enabled: true}}, ConsumerNames: map[string]string{"c1": "crm"}}
	out, err := DecideFanOut(read, FanOut{EventID: "e1", Attempt: 1, Routes: []FanOutRoute{{ConsumerID: "c1", Filtered: true, Delivery: broken}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Issues) != 1 || out.Issues[0].Issue.Kind != IssueRule || out.Issues[0].Issue.Cause != CauseFilterError ||
		out.Issues[0].Issue.SubjectName != "crm" || len(out.IssueItems) != 1 || len(out.Notices) != 1 || out.Notices[0].Topic != NoticeIssueOpened {
		t.Fatalf("fan-out issues %+v items %+v notices %+v", out.Issues, out.IssueItems, out.Notices)
	}
	// A filter that runs again resolves it; a transform's issue stays.
	transform := Issue{ID: IssueID(org, IssueRule, "c1", CauseTransformError), OrgID: org, Kind: IssueRule, Status: IssueOpen,
		ConsumerID: "c1", Cause: CauseTransformError}
	read.Issues = []Issue{out.Issues[0].Issue, transform}
	out, err = DecideFanOut(read, FanOut{EventID: "e1", Attempt: 1, Routes: []FanOutRoute{{ConsumerID: "c1"}}}, t0)
	if err != nil || len(out.Issues) != 1 || out.Issues[0].Issue.Cause != CauseFilterError || out.Issues[0].Issue.Status != IssueResolved {
		t.Fatalf("fan-out issues %+v %v, want the filter's issue resolved alone", out.Issues, err)
	}
}
