package api

import (
	"fmt"
	"net/http"
	"time"

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
	if err := intake.CheckName("name", req.Name); err != nil {
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
	v := Org{ID: o.ID, Name: o.Name, CreatedAt: o.CreatedAt.UTC()}
	if o.BodyRetention > 0 {
		v.BodyRetention = o.BodyRetention.String()
	}
	if o.Retention > 0 {
		v.Retention = o.Retention.String()
	}
	return v
}

// updateOrg sets an org's own retention (an org may shorten or lengthen its
// own, within bounds).
func (s *Server) updateOrg(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateOrgRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	orgs, err := s.store.ListOrgs(r.Context(), sc)
	if err != nil {
		return err
	}
	var o *intake.Org
	for i := range orgs {
		if orgs[i].ID == id {
			o = &orgs[i]
		}
	}
	if o == nil {
		return intake.Errorf(intake.ENOTFOUND, "org %s not found", id)
	}
	if req.BodyRetention != nil {
		if o.BodyRetention, err = retention("body_retention", *req.BodyRetention); err != nil {
			return err
		}
	}
	if req.Retention != nil {
		if o.Retention, err = retention("retention", *req.Retention); err != nil {
			return err
		}
	}
	if err := s.store.SetOrgRetention(r.Context(), sc, o.ID, o.BodyRetention, o.Retention); err != nil {
		return err
	}
	s.audit(r, o.ID, "org.update", "org", o.ID, fmt.Sprintf("body_retention=%s retention=%s", o.BodyRetention, o.Retention))
	writeJSON(w, http.StatusOK, orgView(*o))
	return nil
}

// retention parses a retention setting: "" or "0s" for the default, else
// between an hour and intake.MaxRetention.
func retention(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, intake.Errorf(intake.EINVALID, "%s must be a duration such as \"168h\"", field)
	case d == 0:
		return 0, nil
	case d < time.Hour || d > intake.MaxRetention:
		return 0, intake.Errorf(intake.EINVALID, "%s must be between 1h and %s", field, intake.MaxRetention)
	}
	return d, nil
}
