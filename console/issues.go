package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/intakehq/intake"
)

// The Issues page is the console's first page for trouble (DESIGN §20):
// what is broken, by consumer or connection and cause, why (the last
// error, the sample), and the one step that acts on it.

// issuesView is the Issues page.
type issuesView struct {
	Status   string
	Statuses []string
	Items    []intake.Issue
	Next     string
}

func (c *Console) issues(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	status := q.Get("status")
	if _, ok := q["status"]; !ok {
		status = string(intake.IssueOpen)
	}
	page, err := c.ctl.Issues(r.Context(), s.caller(), intake.IssueQuery{Status: intake.IssueStatus(status), Cursor: q.Get("cursor"), Limit: pageSize})
	if err != nil {
		return err
	}
	v := issuesView{Status: status, Items: page.Items, Statuses: []string{"open", "acknowledged", "resolved", "dismissed", ""}}
	if page.NextCursor != "" {
		v.Next = "?" + url.Values{"status": {status}, "cursor": {page.NextCursor}}.Encode()
	}
	c.render(w, r, s, http.StatusOK, "issues", "Issues", v)
	return nil
}

// issueView is one issue's page.
type issueView struct {
	intake.Issue
	Items     []intake.IssueItem
	Next      string
	Retryable bool
	// Moves are the statuses an operator may set it to from where it is.
	Moves []string
}

func (c *Console) issue(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	d, err := c.ctl.Issue(r.Context(), s.caller(), id, intake.IssueItemsQuery{Cursor: r.URL.Query().Get("cursor"), Limit: pageSize})
	if err != nil {
		return err
	}
	v := issueView{Issue: d.Issue, Items: d.Items.Items, Retryable: d.Kind != intake.IssueRequest}
	if d.Items.NextCursor != "" {
		v.Next = "?" + url.Values{"cursor": {d.Items.NextCursor}}.Encode()
	}
	for _, to := range []intake.IssueStatus{intake.IssueOpen, intake.IssueAcknowledged, intake.IssueDismissed} {
		if to != d.Status && intake.CheckIssueStatus(d.Status, to) == nil {
			v.Moves = append(v.Moves, string(to))
		}
	}
	c.render(w, r, s, http.StatusOK, "issue", "Issue: "+d.Cause, v)
	return nil
}

// setIssueStatus acknowledges, reopens or dismisses an issue.
func (c *Console) setIssueStatus(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	to := intake.IssueStatus(r.PostForm.Get("status"))
	if _, err := c.ctl.UpdateIssue(r.Context(), s.caller(), id, to); err != nil {
		return err
	}
	c.openIssues.forget(s.scope())
	return redirect(w, r, "/console/issues/"+id+"?flash=issue-"+string(to))
}

// retryIssue makes an issue's waiting events due now.
func (c *Console) retryIssue(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	res, err := c.ctl.RetryIssue(r.Context(), s.caller(), id, false)
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/issues/"+id+retriedFlash(res.Count))
}

// openIssueCounts keeps each scope's count of open issues for the nav a
// few seconds, so a page load is not a count each.
type openIssueCounts struct {
	mu      sync.Mutex
	entries map[intake.Scope]openIssueCount
}

type openIssueCount struct {
	n  int
	at time.Time
}

// openIssuesTTL is the oldest count of open issues the nav shows.
const openIssuesTTL = 5 * time.Second

// get is the scope's count of open issues, -1 when it cannot be read now
// (the nav then shows none, and the page itself is not held up).
func (oc *openIssueCounts) get(ctx context.Context, sc intake.Scope, now time.Time, count func(context.Context) (int, error)) int {
	oc.mu.Lock()
	e, ok := oc.entries[sc]
	oc.mu.Unlock()
	if age := now.Sub(e.at); ok && age >= 0 && age < openIssuesTTL {
		return e.n
	}
	n, err := count(ctx)
	if err != nil {
		return -1
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.entries == nil || len(oc.entries) > 1000 {
		oc.entries = map[intake.Scope]openIssueCount{}
	}
	oc.entries[sc] = openIssueCount{n: n, at: now}
	return n
}

// forget drops a scope's count, after an operator moved one of its issues.
func (oc *openIssueCounts) forget(sc intake.Scope) {
	oc.mu.Lock()
	delete(oc.entries, sc)
	oc.mu.Unlock()
}

// issueAlarms are the overview's alarms: the open issues, each naming its
// consumer or connection and its cause, worst first, at most max.
func issueAlarms(open []intake.Issue, max int) []alarm {
	rank := func(i intake.Issue) int {
		switch i.Kind {
		case intake.IssueDelivery, intake.IssueRequest:
			return 0
		}
		return 1
	}
	slices.SortStableFunc(open, func(a, b intake.Issue) int { return rank(a) - rank(b) })
	var out []alarm
	for _, i := range open[:min(len(open), max)] {
		level := "bad"
		if rank(i) > 0 {
			level = "warn"
		}
		text := issueTitle(i) + ": " + count(int(i.Count), "failure", "failures") + " over " + count(int(i.Events), "event", "events") +
			", the last " + ago(i.LastSeenAt) + "."
		if i.Kind == intake.IssueBacklog {
			text = issueTitle(i) + ": " + i.LastError + "."
		}
		out = append(out, alarm{Level: level, Text: text, Link: "/console/issues/" + url.PathEscape(i.ID)})
	}
	return out
}

// issueTitle names an issue as a person reads it: its subject and cause.
func issueTitle(i intake.Issue) string {
	subject := i.SubjectName
	if subject == "" {
		subject = i.ConsumerID + i.ConnectionID
	}
	switch i.Kind {
	case intake.IssueRequest:
		return "Connection " + subject + ": " + i.Cause
	case intake.IssueBacklog:
		return "Consumer " + subject + ": " + i.Cause
	case intake.IssueRule:
		return "Consumer " + subject + "'s rules: " + i.Cause
	}
	return "Consumer " + subject + ": " + i.Cause
}
