package api

import (
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	q := r.URL.Query()
	if err := control.CheckParams(q, "status", "kind", "consumer_id", "connection_id", "cursor", "limit"); err != nil {
		return err
	}
	limit, err := control.ParseLimit(q.Get("limit"))
	if err != nil {
		return err
	}
	page, err := s.ctl.Issues(r.Context(), who, intake.IssueQuery{Status: intake.IssueStatus(q.Get("status")), Kind: intake.IssueKind(q.Get("kind")),
		ConsumerID: q.Get("consumer_id"), ConnectionID: q.Get("connection_id"), Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	out := List[Issue]{Items: make([]Issue, 0, len(page.Items)), NextCursor: page.NextCursor}
	for _, i := range page.Items {
		out.Items = append(out.Items, IssueView(i))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := control.CheckParams(q, "cursor", "limit"); err != nil {
		return err
	}
	limit, err := control.ParseLimit(q.Get("limit"))
	if err != nil {
		return err
	}
	d, err := s.ctl.Issue(r.Context(), who, id, intake.IssueItemsQuery{Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, IssueDetailView(d))
	return nil
}

func (s *Server) updateIssue(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateIssueRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	i, err := s.ctl.UpdateIssue(r.Context(), who, id, intake.IssueStatus(req.Status))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, IssueView(i))
	return nil
}

// IssueView is an issue on the wire.
func IssueView(i intake.Issue) Issue {
	return Issue{ID: i.ID, OrgID: i.OrgID, Kind: string(i.Kind), Status: string(i.Status), ConsumerID: i.ConsumerID,
		ConnectionID: i.ConnectionID, SubjectName: i.SubjectName, Cause: i.Cause, Count: i.Count, Events: i.Events,
		FirstSeenAt: i.FirstSeenAt, LastSeenAt: i.LastSeenAt, OpenedAt: i.OpenedAt, AcknowledgedAt: optionalTime(i.AcknowledgedAt),
		ResolvedAt: optionalTime(i.ResolvedAt), LastError: i.LastError, SampleEventID: i.SampleEventID, SampleMessageID: i.SampleMessageID}
}

// IssueDetailView is an issue with a page of its items on the wire.
func IssueDetailView(d control.IssueDetail) IssueDetail {
	out := IssueDetail{Issue: IssueView(d.Issue), Items: make([]IssueItem, 0, len(d.Items.Items)), NextCursor: d.Items.NextCursor}
	for _, it := range d.Items.Items {
		out.Items = append(out.Items, IssueItem{EventID: it.EventID, MessageID: it.MessageID, At: it.At})
	}
	return out
}
