package api

import (
	"net/http"
	"strconv"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// applyDocument is `intake apply`: the document in, the plan out (with what
// the server minted, once, for what it created).
func (s *Server) applyDocument(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query(), "dry_run", "prune"); err != nil {
		return err
	}
	var opts control.ApplyOptions
	for name, v := range map[string]*bool{"dry_run": &opts.DryRun, "prune": &opts.Prune} {
		q := r.URL.Query().Get(name)
		if q == "" {
			continue
		}
		b, err := strconv.ParseBool(q)
		if err != nil {
			return intake.Errorf(intake.EINVALID, "%s must be true or false", name)
		}
		*v = b
	}
	var doc control.Document
	if err := decode(w, r, &doc); err != nil {
		return err
	}
	plan, err := s.ctl.Apply(r.Context(), who, doc, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, plan)
	return nil
}

// exportDocument is `intake export`: the current state as a document
// without secrets.
func (s *Server) exportDocument(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query(), "org_id"); err != nil {
		return err
	}
	doc, err := s.ctl.Export(r.Context(), who, r.URL.Query().Get("org_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}
