package api

import (
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) createOrg(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req CreateOrgRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	o, key, err := s.ctl.CreateOrg(r.Context(), who, req.Name)
	if err != nil {
		return err
	}
	out := orgView(o)
	out.APIKey = key
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listOrgs(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query()); err != nil {
		return err
	}
	orgs, err := s.ctl.Orgs(r.Context(), who)
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
	v := Org{ID: o.ID, Name: o.Name, CreatedAt: o.CreatedAt.UTC()}
	if o.BodyRetention > 0 {
		v.BodyRetention = o.BodyRetention.String()
	}
	if o.Retention > 0 {
		v.Retention = o.Retention.String()
	}
	return v
}

func (s *Server) getOrg(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	o, err := s.ctl.Org(r.Context(), who, id)
	if err != nil {
		return err
	}
	setETag(w, o.Version)
	writeJSON(w, http.StatusOK, orgView(o))
	return nil
}

// updateOrg renames an org (staff) and sets its own retention.
func (s *Server) updateOrg(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateOrgRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	version, err := ifMatch(r)
	if err != nil {
		return err
	}
	o, err := s.ctl.UpdateOrg(r.Context(), who, id, control.OrgUpdate{Name: req.Name, BodyRetention: req.BodyRetention,
		Retention: req.Retention, Version: version})
	if err != nil {
		return err
	}
	setETag(w, o.Version)
	writeJSON(w, http.StatusOK, orgView(o))
	return nil
}

// deleteOrg deletes an org (staff) and answers it as it was.
func (s *Server) deleteOrg(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	o, err := s.ctl.DeleteOrg(r.Context(), who, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, orgView(o))
	return nil
}
