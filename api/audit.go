package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// AuditEntry is one recorded operator action.
type AuditEntry struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"org_id"`
	Actor      string    `json:"actor"`
	Action     string    `json:"action"`
	TargetType string    `json:"target_type"`
	TargetID   string    `json:"target_id"`
	Detail     string    `json:"detail,omitempty"`
	At         time.Time `json:"at"`
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query(), "limit", "cursor"); err != nil {
		return err
	}
	limit, err := control.ParseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		return err
	}
	page, err := s.ctl.Audit(r.Context(), who, intake.AuditFilter{Limit: limit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		return err
	}
	out := List[AuditEntry]{Items: make([]AuditEntry, 0, len(page.Items)), NextCursor: page.NextCursor}
	for _, a := range page.Items {
		out.Items = append(out.Items, AuditEntry{ID: a.ID, OrgID: a.OrgID, Actor: a.Actor, Action: a.Action,
			TargetType: a.TargetType, TargetID: a.TargetID, Detail: a.Detail, At: a.At})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
