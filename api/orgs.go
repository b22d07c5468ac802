package api

import (
	"net/http"

	"github.com/intakehq/intake"
)

// apiKeyPrefix marks org API keys, so a leaked one is recognisable.
const apiKeyPrefix = "ik_"

func (s *Server) createOrg(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	if err := staffOnly(sc); err != nil {
		return err
	}
	var req CreateOrgRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := checkName("name", req.Name); err != nil {
		return err
	}
	o := intake.Org{ID: intake.NewID(), Name: req.Name, CreatedAt: s.clock.Now().UTC()}
	key, k := newKey(o.ID, o.CreatedAt)
	if err := s.store.CreateOrg(r.Context(), o, k); err != nil {
		return err
	}
	s.audit(r, o.ID, "org.create", "org", o.ID, "name=", o.Name)
	out := orgView(o)
	out.APIKey = key
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listOrgs(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	orgs, err := s.store.ListOrgs(r.Context(), sc)
	if err != nil {
		return err
	}
	out := List[Org]{Items: make([]Org, 0, len(orgs))}
	for _, o := range orgs {
		out.Items = append(out.Items, orgView(o))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func orgView(o intake.Org) Org {
	return Org{ID: o.ID, Name: o.Name, CreatedAt: o.CreatedAt.UTC()}
}
