package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/intakehq/intake"
)

type actorKey struct{}

// actorOf names who made a request: "staff", or the first characters of
// the org key used (enough to tell keys apart, too few to use one).
func actorOf(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok {
		return a
	}
	return "unknown"
}

func keyActor(tok string) string {
	if len(tok) > keyPrefixLen {
		tok = tok[:keyPrefixLen]
	}
	return "key:" + tok
}

// audit records an operator action after it succeeded. A failure to record
// is logged: the action itself has already committed.
func (s *Server) audit(r *http.Request, orgID, action, targetType, targetID string, detail ...any) {
	a := intake.AuditEntry{
		ID: intake.NewID(), OrgID: orgID, Actor: actorOf(r.Context()), Action: action,
		TargetType: targetType, TargetID: targetID, Detail: fmt.Sprint(detail...), At: s.clock.Now().UTC(),
	}
	if err := s.store.RecordAudit(context.WithoutCancel(r.Context()), a); err != nil {
		s.log.Error("audit: could not record an action", "action", action, "target_id", targetID, "err", err)
	}
}

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

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := s.store.ListAudit(r.Context(), sc, intake.AuditFilter{Limit: limit, Cursor: cursor})
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
