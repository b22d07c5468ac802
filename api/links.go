package api

import (
	"net/http"

	"github.com/intakehq/intake"
)

// maxObjectID bounds a provider object id: provider ids and node ids are
// far shorter.
const maxObjectID = 500

// createSubjectLink records that a provider object is a record of an app,
// registered by the app when it created the object at the provider, so the
// events about it go back to that app's completion consumers.
func (s *Server) createSubjectLink(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	var req CreateSubjectLinkRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.ConnectionID == "" {
		return intake.Errorf(intake.EINVALID, "connection_id is required")
	}
	if err := checkID("connection_id", req.ConnectionID); err != nil {
		return err
	}
	if req.ProviderObjectID == "" {
		return intake.Errorf(intake.EINVALID, "provider_object_id is required")
	}
	if len(req.ProviderObjectID) > maxObjectID {
		return intake.Errorf(intake.EINVALID, "provider_object_id must be at most %d bytes", maxObjectID)
	}
	if err := intake.CheckName("app", req.App); err != nil {
		return err
	}
	if err := intake.CheckName("record_id", req.RecordID); err != nil {
		return err
	}
	c, err := s.store.Connection(r.Context(), sc, req.ConnectionID)
	if err != nil {
		return err
	}
	l := intake.SubjectLink{
		ID:               intake.NewID(),
		OrgID:            c.OrgID,
		ConnectionID:     c.ID,
		ProviderObjectID: req.ProviderObjectID,
		App:              req.App,
		RecordID:         req.RecordID,
		CreatedAt:        s.clock.Now().UTC(),
	}
	if err := s.store.PutSubjectLink(r.Context(), sc, l); err != nil {
		return err
	}
	s.audit(r, l.OrgID, "subject_link.put", "subject_link", l.ID, "app=", l.App)
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
