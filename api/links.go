package api

import (
	"net/http"

	"github.com/intakehq/intake/control"
)

// createSubjectLink records that a provider object is a record of an app,
// registered by the app when it created the object at the provider, so the
// events about it go back to that app's completion consumers.
func (s *Server) createSubjectLink(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req CreateSubjectLinkRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	l, err := s.ctl.PutSubjectLink(r.Context(), who, control.NewSubjectLink{ConnectionID: req.ConnectionID,
		ProviderObjectID: req.ProviderObjectID, App: req.App, RecordID: req.RecordID})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, SubjectLink{
		ID:               l.ID,
		OrgID:            l.OrgID,
		ConnectionID:     l.ConnectionID,
		ProviderObjectID: l.ProviderObjectID,
		App:              l.App,
		RecordID:         l.RecordID,
		CreatedAt:        l.CreatedAt,
	})
	return nil
}
