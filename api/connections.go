package api

import (
	"encoding/json"
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) createConnection(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req CreateConnectionRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, err := s.ctl.CreateConnection(r.Context(), who, control.NewConnection{OrgID: req.OrgID, Provider: req.Provider,
		Name: req.Name, Secrets: req.Secrets, Config: req.Config})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.connectionView(c))
	return nil
}

// updateConnection changes a connection's name, config or filter.
func (s *Server) updateConnection(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateConnectionRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	version, err := ifMatch(r)
	if err != nil {
		return err
	}
	c, err := s.ctl.UpdateConnection(r.Context(), who, id, control.ConnectionUpdate{Name: req.Name, Config: req.Config, Filter: req.Filter,
		Version: version})
	if err != nil {
		return err
	}
	setETag(w, c.Version)
	writeJSON(w, http.StatusOK, s.connectionView(c))
	return nil
}

// replaceSecrets replaces a connection's list of signing secrets; during a
// provider's rotation the old and the new are given together.
func (s *Server) replaceSecrets(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req SecretsRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, err := s.ctl.ReplaceSecrets(r.Context(), who, id, req.Secrets)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.connectionView(c))
	return nil
}

// adoptHandshakeSecret adds to a connection the signing secret its
// provider handed over in a recorded handshake.
func (s *Server) adoptHandshakeSecret(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req AdoptSecretRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, _, err := s.ctl.AdoptHandshakeSecret(r.Context(), who, id, req.MessageID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.connectionView(c))
	return nil
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query()); err != nil {
		return err
	}
	conns, err := s.ctl.Connections(r.Context(), who)
	if err != nil {
		return err
	}
	out := List[Connection]{Items: make([]Connection, 0, len(conns))}
	for _, c := range conns {
		out.Items = append(out.Items, s.connectionView(c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getConnection(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := s.ctl.Connection(r.Context(), who, id)
	if err != nil {
		return err
	}
	setETag(w, c.Version)
	writeJSON(w, http.StatusOK, s.connectionView(c))
	return nil
}

// connectionView shows a connection without its secrets, only how many it
// holds (absent when they do not open).
func (s *Server) connectionView(c intake.Connection) Connection {
	out := Connection{
		ID:        c.ID,
		OrgID:     c.OrgID,
		Provider:  c.Provider,
		Name:      c.Name,
		Config:    c.Config,
		CreatedAt: c.CreatedAt.UTC(),
		Filter:    c.Filter,
	}
	if len(out.Config) == 0 {
		out.Config = json.RawMessage("{}")
	}
	if n, ok := s.ctl.SecretCount(c); ok {
		out.SecretCount = &n
	} else {
		s.log.Warn("connection secrets do not open; was the master key changed?", "connection_id", c.ID)
	}
	return out
}
