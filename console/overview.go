package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"golang.org/x/sync/singleflight"
)

// The overview's chart: what providers sent in each of the last 24 hours,
// and where it stands now.
const (
	chartHours  = 24
	overviewTTL = 5 * time.Second // a busy page is not recounted on every load
	// stalledAfter is how long due work may wait before the overview
	// raises an alarm (workers or router not keeping up, or stopped).
	stalledAfter = time.Minute
	// replicaLagAlarm is how far the store's replica may fall behind
	// before the overview raises an alarm (it syncs every second).
	replicaLagAlarm = time.Minute
)

// overviewView is the overview page.
type overviewView struct {
	At     time.Time
	Chart  chart
	Totals hourCounts
	// States counts the messages not settled yet, however old.
	States       []stateCount
	DeadEvents   stateCount
	Retrying     stateCount
	NoConsumer   stateCount
	OldestDue    time.Time
	OldestDueEvt time.Time
	// The event due longest for its fan-out, and the consumer whose call
	// has been due longest (its name when it can be read).
	OldestDueEvtID      string
	OldestDueCall       time.Time
	OldestDueCallee     string
	OldestDueCalleeName string
	// Issues are the first open issues, OpenIssues how many are open.
	Issues     []intake.Issue
	OpenIssues int
	// Replica is how the embedded store's replica stands, for staff; nil
	// when the store is not replicated.
	Replica *intake.ReplicaState
	Alarms  []alarm
}

// hourCounts is where one hour's messages stand now.
type hourCounts struct {
	Start                                  time.Time
	Received, Processed, Ignored, Dead, In int
}

type alarm struct {
	Level, Text, Link string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := c.overviews.get(r.Context(), s.scope(), c.clock.Now(), func(ctx context.Context, now time.Time) (overviewView, error) {
		return c.computeOverview(ctx, s, now)
	})
	if err != nil {
		return err
	}
	c.render(w, r, s, http.StatusOK, "overview", "Overview", v)
	return nil
}

// computeOverview reads the store's Overview of the scope: one grouped
// pass over the last day's messages and a few small partial indexes, so
// its cost follows the day's traffic, not the size of the store.
func (c *Console) computeOverview(ctx context.Context, s *session, now time.Time) (overviewView, error) {
	v := overviewView{At: now}
	end := now.Truncate(time.Hour).Add(time.Hour)
	since := end.Add(-chartHours * time.Hour)
	o, err := c.ctl.Overview(ctx, s.caller(), intake.OverviewQuery{Since: since, Hours: chartHours, Now: now, QueuedBefore: now.Add(-stalledAfter)})
	if err != nil {
		return v, err
	}
	hours := make([]hourCounts, chartHours)
	for h := range hours {
		n, hc := o.Hours[h], &hours[h]
		hc.Start = since.Add(time.Duration(h) * time.Hour)
		hc.Processed, hc.Ignored, hc.Dead = n[intake.MessageProcessed], n[intake.MessageIgnored], n[intake.MessageDead]
		hc.In = n[intake.MessageQueued] + n[intake.MessageProcessing] + n[intake.MessageFailed]
		for _, k := range n {
			hc.Received += k
		}
		v.Totals.Received += hc.Received
		v.Totals.Processed += hc.Processed
		v.Totals.Ignored += hc.Ignored
		v.Totals.Dead += hc.Dead
		v.Totals.In += hc.In
	}
	v.Chart = newChart(hours)
	for _, st := range intake.LiveMessageStates {
		v.States = append(v.States, stateCount{State: string(st), Count: o.Live[st]})
	}
	v.DeadEvents = stateCount{State: string(intake.EventDead), Count: o.Events[intake.EventDead]}
	v.Retrying = stateCount{State: string(intake.EventRetrying), Count: o.Events[intake.EventRetrying]}
	v.NoConsumer = stateCount{State: string(intake.EventNoConsumer), Count: o.Events[intake.EventNoConsumer]}
	v.Replica = o.Replica
	v.OldestDue, v.OldestDueEvt, v.OldestDueEvtID = o.OldestDueMessage, o.OldestDueEvent, o.OldestDueEventID
	v.OldestDueCall, v.OldestDueCallee, v.OldestDueCalleeName = o.OldestDueRoute, o.OldestDueRouteConsumer, o.OldestDueRouteConsumer
	if v.OldestDueCallee != "" {
		if cs, err := c.ctl.Consumer(ctx, s.caller(), v.OldestDueCallee); err == nil && cs.Name != "" {
			v.OldestDueCalleeName = cs.Name
		}
	}
	open, err := c.ctl.Issues(ctx, s.caller(), intake.IssueQuery{Status: intake.IssueOpen, Limit: maxIssueAlarms})
	if err != nil {
		return v, err
	}
	v.Issues = open.Items
	v.OpenIssues = len(open.Items)
	if open.NextCursor != "" {
		if v.OpenIssues, err = c.ctl.CountOpenIssues(ctx, s.caller()); err != nil {
			return v, err
		}
	}
	v.Alarms = alarms(v, now, o.QueuedBefore)
	return v, nil
}

// maxIssueAlarms is how many open issues the overview names; a link to
// the Issues page counts the rest.
const maxIssueAlarms = 10

// alarms are the conditions an operator should act on, worst first: work
// intake itself is not taking (its workers or routers stopped), then the
// open issues by name, then the messages that failed processing, which no
// consumer's or connection's issue holds.
func alarms(v overviewView, now time.Time, stalledQueued int) []alarm {
	var out []alarm
	if r := v.Replica; r != nil && (r.Failing != "" || r.Lag > replicaLagAlarm) {
		text := fmt.Sprintf("The store's replica is %s behind: the commits since are on this machine's disk only.", roughly(r.Lag))
		if r.Failing != "" {
			text += " Its syncs fail: " + r.Failing
		}
		out = append(out, alarm{"bad", text, "#replica"})
	}
	if !v.OldestDue.IsZero() && now.Sub(v.OldestDue) > stalledAfter {
		out = append(out, alarm{"bad", fmt.Sprintf("Messages are waiting: the oldest has been due for %s. Are the workers running?",
			roughly(now.Sub(v.OldestDue))), "/console/messages?state=queued"})
	}
	if !v.OldestDueEvt.IsZero() && now.Sub(v.OldestDueEvt) > stalledAfter {
		out = append(out, alarm{"bad", fmt.Sprintf("Events are waiting to be routed: the oldest has been due for %s. Are the routers running?",
			roughly(now.Sub(v.OldestDueEvt))), "/console/events/" + url.PathEscape(v.OldestDueEvtID)})
	}
	if !v.OldestDueCall.IsZero() && now.Sub(v.OldestDueCall) > stalledAfter {
		out = append(out, alarm{"bad", fmt.Sprintf("Calls to consumer %s are waiting: the oldest has been due for %s.",
			v.OldestDueCalleeName, roughly(now.Sub(v.OldestDueCall))), "/console/consumers/" + url.PathEscape(v.OldestDueCallee)})
	}
	if stalledQueued > 0 && (v.OldestDue.IsZero() || now.Sub(v.OldestDue) <= stalledAfter) {
		out = append(out, alarm{"bad", fmt.Sprintf("%d messages have been queued for over %s. Are the workers running?",
			stalledQueued, roughly(stalledAfter)), "/console/messages?state=queued"})
	}
	out = append(out, issueAlarms(v.Issues, maxIssueAlarms)...)
	if more := v.OpenIssues - min(len(v.Issues), maxIssueAlarms); more > 0 {
		out = append(out, alarm{"warn", count(more, "more issue is open.", "more issues are open."), "/console/issues?status=open"})
	}
	if v.Totals.Dead > 0 {
		out = append(out, alarm{"bad", count(v.Totals.Dead, "message received in the last 24 h is dead.", "messages received in the last 24 h are dead."), "/console/dead"})
	}
	for _, st := range v.States {
		if st.State == string(intake.MessageFailed) && st.Count > 0 {
			out = append(out, alarm{"warn", count(st.Count, "message failed and waits", "messages failed and wait") + " to be retried.", "/console/messages?state=failed"})
		}
	}
	return out
}

// count writes n with the singular or plural words after it.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func newChart(hours []hourCounts) chart {
	parts := []part{{"processed", "processed"}, {"ignored", "ignored"}, {"dead", "dead"}, {"inflight", "in flight"}}
	slots := make([]slot, 0, len(hours))
	for _, h := range hours {
		slots = append(slots, slot{Label: h.Start.UTC().Format("15:04"), Span: hourSpan(h.Start),
			Of: fmt.Sprintf(" of %d received", h.Received), Values: []int{h.Processed, h.Ignored, h.Dead, h.In}})
	}
	return barChart("Messages received per hour over the last 24 hours", parts, slots, 3)
}

// hourSpan names the hour from start, as a chart's titles do.
func hourSpan(start time.Time) string {
	return fmt.Sprintf("%s–%s UTC", start.UTC().Format("15:04"), start.Add(time.Hour).UTC().Format("15:04"))
}

// overviewCache keeps each scope's overview for overviewTTL: a busy page is
// counted once every few seconds, and the loads of a scope that arrive while
// it is counted wait for that count instead of starting their own. No one
// opening the page sees figures older than overviewTTL.
type overviewCache struct {
	mu       sync.Mutex
	entries  map[intake.Scope]cachedOverview
	counting singleflight.Group
}

type cachedOverview struct {
	v  overviewView
	at time.Time
}

func (oc *overviewCache) get(ctx context.Context, sc intake.Scope, now time.Time,
	compute func(ctx context.Context, now time.Time) (overviewView, error)) (overviewView, error) {
	oc.mu.Lock()
	e, ok := oc.entries[sc]
	oc.mu.Unlock()
	if age := now.Sub(e.at); ok && age >= 0 && age < overviewTTL {
		return e.v, nil
	}
	// One count per scope at a time, on behalf of every load waiting for
	// it: it runs to its read deadline even if the load that started it
	// goes away.
	v, err, _ := oc.counting.Do(fmt.Sprintf("%+v", sc), func() (any, error) {
		v, err := compute(context.WithoutCancel(ctx), now)
		if err != nil {
			return v, err
		}
		oc.mu.Lock()
		defer oc.mu.Unlock()
		if oc.entries == nil || len(oc.entries) > 1000 {
			oc.entries = map[intake.Scope]cachedOverview{}
		}
		oc.entries[sc] = cachedOverview{v: v, at: now}
		return v, nil
	})
	return v.(overviewView), err
}
