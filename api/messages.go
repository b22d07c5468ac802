package api

import (
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/rawbody"
)

// listMessages lists (and searches) messages: the query is control's to
// read.
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	f, err := control.MessageQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.ctl.Messages(r.Context(), who, f)
	if err != nil {
		return err
	}
	out := List[Message]{Items: make([]Message, 0, len(page.Items)), NextCursor: page.NextCursor}
	for _, m := range page.Items {
		out.Items = append(out.Items, messageView(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := s.ctl.Message(r.Context(), who, id)
	if err != nil {
		return err
	}
	out := MessageDetail{
		Message:     messageView(m.Message),
		Query:       m.Query,
		Headers:     m.Header,
		EventIDs:    m.EventIDs,
		BodyExpired: m.BodyExpired,
	}
	if out.EventIDs == nil {
		out.EventIDs = []string{}
	}
	attempts, err := s.ctl.MessageAttempts(r.Context(), who, id)
	if err != nil {
		return err
	}
	out.Attempts = make([]Attempt, 0, len(attempts))
	for _, a := range attempts {
		out.Attempts = append(out.Attempts, Attempt{Attempt: a.Attempt, State: string(a.State), Outcome: a.Outcome,
			ErrorCode: a.ErrorCode, ErrorMessage: a.ErrorMessage, At: a.At.UTC()})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getMessageBody(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	body, size, header, err := s.ctl.OpenMessageBody(r.Context(), who, id)
	if err != nil {
		return err
	}
	defer body.Close()
	rawbody.Stream(w, body, size, header, "")
	return nil
}

func messageView(m intake.Message) Message {
	return Message{
		ID:              m.ID,
		OrgID:           m.OrgID,
		EndpointID:      m.EndpointID,
		ConnectionID:    m.ConnectionID,
		State:           string(m.State),
		Attempt:         m.Attempt,
		MaxAttempts:     m.MaxAttempts,
		ReceivedAt:      m.ReceivedAt.UTC(),
		Method:          m.Method,
		Digest:          m.Digest,
		ProviderEventID: m.ProviderEventID,
		ErrorCode:       m.ErrorCode,
		ErrorMessage:    m.ErrorMessage,
		Outcome:         m.Outcome,
		ReplayOf:        m.ReplayOf,
	}
}
