package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// APIKey is an org key as listed: its prefix and role, never the key.
type APIKey struct {
	ID        string     `json:"id"`
	OrgID     string     `json:"org_id"`
	Prefix    string     `json:"prefix"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Key       string     `json:"key,omitempty"` // only when created
}

// CreateKeyRequest asks for another key of an org (org_id may be omitted
// with an org's key), with a role: viewer, operator or admin (omitted:
// admin), and a name of at most 100 bytes saying who holds it (optional).
type CreateKeyRequest struct {
	OrgID string `json:"org_id"`
	Role  string `json:"role,omitempty"`
	Name  string `json:"name,omitempty"`
}

func keyView(k intake.APIKey) APIKey {
	v := APIKey{ID: k.ID, OrgID: k.OrgID, Prefix: k.Prefix, Name: k.Name, Role: string(k.Role), CreatedAt: k.CreatedAt}
	if !k.RevokedAt.IsZero() {
		v.RevokedAt = &k.RevokedAt
	}
	return v
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req CreateKeyRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	k, key, err := s.ctl.CreateKey(r.Context(), who, req.OrgID, intake.Role(req.Role), req.Name)
	if err != nil {
		return err
	}
	out := keyView(k)
	out.Key = key
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query()); err != nil {
		return err
	}
	keys, err := s.ctl.APIKeys(r.Context(), who)
	if err != nil {
		return err
	}
	out := List[APIKey]{Items: make([]APIKey, 0, len(keys))}
	for _, k := range keys {
		out.Items = append(out.Items, keyView(k))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// revokeKey stops a key at once; the next request with it is refused.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.ctl.RevokeKey(r.Context(), who, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
