package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/token"
)

// keyPrefixLen is how much of a key is kept in the clear to tell keys
// apart: "ik_" and six random characters (36 bits of the 256).
const keyPrefixLen = len(apiKeyPrefix) + 6

// newKey makes an org API key: the key itself, shown once, and the row
// that stores its hash.
func newKey(orgID string, at time.Time) (string, intake.APIKey) {
	key := token.New(apiKeyPrefix)
	return key, intake.APIKey{ID: intake.NewID(), OrgID: orgID, Prefix: key[:keyPrefixLen], Hash: token.Hash(key), CreatedAt: at}
}

// APIKey is an org key as listed: its prefix, never the key.
type APIKey struct {
	ID        string     `json:"id"`
	OrgID     string     `json:"org_id"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Key       string     `json:"key,omitempty"` // only when created
}

// CreateKeyRequest asks for another key of an org (org_id may be omitted
// with an org's key).
type CreateKeyRequest struct {
	OrgID string `json:"org_id"`
}

func keyView(k intake.APIKey) APIKey {
	v := APIKey{ID: k.ID, OrgID: k.OrgID, Prefix: k.Prefix, CreatedAt: k.CreatedAt}
	if !k.RevokedAt.IsZero() {
		v.RevokedAt = &k.RevokedAt
	}
	return v
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	var req CreateKeyRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	orgID, err := orgFor(sc, req.OrgID)
	if err != nil {
		return err
	}
	key, k := newKey(orgID, s.clock.Now().UTC())
	if err := s.store.CreateAPIKey(r.Context(), sc, k); err != nil {
		return err
	}
	s.audit(r, orgID, "key.create", "api_key", k.ID, "prefix=", k.Prefix)
	out := keyView(k)
	out.Key = key
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	keys, err := s.store.ListAPIKeys(r.Context(), sc)
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
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.store.RevokeAPIKey(r.Context(), sc, id, s.clock.Now().UTC()); err != nil {
		return err
	}
	orgID := sc.OrgID
	if keys, err := s.store.ListAPIKeys(r.Context(), sc); err == nil {
		for _, k := range keys {
			if k.ID == id {
				orgID = k.OrgID
			}
		}
	}
	s.audit(r, orgID, "key.revoke", "api_key", id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
