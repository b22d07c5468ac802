package main

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/intakehq/intake/api"
)

// IssuesCmd reads and moves the issues: failures that share one cause,
// by consumer or connection (DESIGN §20).
type IssuesCmd struct {
	List    IssuesListCmd    `cmd:"" help:"List the issues, the last seen first."`
	Show    IssuesShowCmd    `cmd:"" help:"Show an issue with the events (or messages) it touched, the last failed first."`
	Ack     IssuesStatusCmd  `cmd:"" help:"Acknowledge an issue: it keeps counting, sends no notice but its resolution, and leaves the open list."`
	Dismiss IssuesDismissCmd `cmd:"" help:"Dismiss an issue; it reopens if its cause returns."`
	Retry   IssuesRetryCmd   `cmd:"" help:"Retry now: every event of the issue still waiting for its consumer becomes due now (no attempt spent); --dry-run to see them first."`
}

// IssuesListCmd lists issues.
type IssuesListCmd struct {
	Status     string `name:"status" enum:",open,acknowledged,resolved,dismissed" default:"" help:"Only issues of this status (open, acknowledged, resolved, dismissed)."`
	Kind       string `name:"kind" enum:",delivery,rule,request,backlog" default:"" help:"Only issues of this kind (delivery, rule, request, backlog)."`
	Consumer   string `name:"consumer" help:"Only this consumer's issues (its id)."`
	Connection string `name:"connection" help:"Only this connection's issues (its id)."`
	Limit      int    `name:"limit" help:"Page size."`
	Cursor     string `name:"cursor" help:"The cursor a previous page printed."`
	listFlags
}

// Run lists the issues.
func (c *IssuesListCmd) Run(cl *Client) error {
	q := url.Values{}
	for k, v := range map[string]string{"status": c.Status, "kind": c.Kind, "consumer_id": c.Consumer, "connection_id": c.Connection,
		"cursor": c.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if c.Limit > 0 {
		q.Set("limit", strconv.Itoa(c.Limit))
	}
	return printList(cl, c.listFlags, "/api/v1/issues", q,
		[]string{"ID", "STATUS", "KIND", "SUBJECT", "CAUSE", "COUNT", "EVENTS", "LAST SEEN"},
		func(i api.Issue) []string {
			return []string{i.ID, i.Status, i.Kind, issueSubject(i), i.Cause, strconv.FormatInt(i.Count, 10),
				strconv.FormatInt(i.Events, 10), timeCell(i.LastSeenAt)}
		})
}

// issueSubject names an issue's consumer or connection.
func issueSubject(i api.Issue) string {
	if i.ConnectionID != "" {
		return "connection " + i.SubjectName
	}
	return "consumer " + i.SubjectName
}

// IssuesShowCmd shows one issue.
type IssuesShowCmd struct {
	outputFlags
	ID     string `arg:"" help:"The issue's id."`
	Cursor string `name:"cursor" help:"The cursor of the next page of its items, as a previous show printed."`
}

// Run shows the issue and its items.
func (c *IssuesShowCmd) Run(cl *Client) error {
	q := url.Values{}
	if c.Cursor != "" {
		q.Set("cursor", c.Cursor)
	}
	var d api.IssueDetail
	raw, err := cl.get(idPath("/api/v1/issues", c.ID), q, &d)
	if err != nil {
		return err
	}
	if c.JSON {
		return cl.printJSON(raw)
	}
	w := cl.stdout()
	fmt.Fprintf(w, "id:          %s\nstatus:      %s\nkind:        %s\nsubject:     %s (%s%s)\ncause:       %s\ncount:       %d calls over %d %s\n",
		d.ID, d.Status, d.Kind, issueSubject(d.Issue), d.ConsumerID, d.ConnectionID, d.Cause, d.Count, d.Events, itemNoun(d.Issue))
	fmt.Fprintf(w, "first seen:  %s\nlast seen:   %s\nopened:      %s\nlast error:  %s\n",
		timeCell(d.FirstSeenAt), timeCell(d.LastSeenAt), timeCell(d.OpenedAt), d.LastError)
	if d.AcknowledgedAt != nil {
		fmt.Fprintf(w, "acknowledged: %s\n", timeCell(*d.AcknowledgedAt))
	}
	if d.ResolvedAt != nil {
		fmt.Fprintf(w, "resolved:    %s\n", timeCell(*d.ResolvedAt))
	}
	fmt.Fprintln(w)
	rows := make([][]string, len(d.Items))
	for k, it := range d.Items {
		rows[k] = []string{it.EventID + it.MessageID, timeCell(it.At)}
	}
	header := "EVENT"
	if d.ConnectionID != "" {
		header = "MESSAGE"
	}
	if err := cl.printTable([]string{header, "LAST FAILED"}, rows); err != nil {
		return err
	}
	if d.NextCursor != "" {
		_, err = fmt.Fprintf(w, "more: --cursor %s\n", d.NextCursor)
	}
	return err
}

func itemNoun(i api.Issue) string {
	if i.ConnectionID != "" {
		return "messages"
	}
	return "events"
}

// IssuesStatusCmd acknowledges an issue, or with --reopen opens it again.
type IssuesStatusCmd struct {
	outputFlags
	ID     string `arg:"" help:"The issue's id."`
	Reopen bool   `name:"reopen" help:"Open an acknowledged issue again instead."`
}

// Run acknowledges the issue.
func (c *IssuesStatusCmd) Run(cl *Client) error {
	status := "acknowledged"
	if c.Reopen {
		status = "open"
	}
	return cl.send(c.outputFlags, "PATCH", idPath("/api/v1/issues", c.ID), api.UpdateIssueRequest{Status: status})
}

// IssuesDismissCmd dismisses an issue.
type IssuesDismissCmd struct {
	outputFlags
	ID string `arg:"" help:"The issue's id."`
}

// Run dismisses the issue.
func (c *IssuesDismissCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, "PATCH", idPath("/api/v1/issues", c.ID), api.UpdateIssueRequest{Status: "dismissed"})
}
