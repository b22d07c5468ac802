package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/provider"
)

func (s *Server) createConnection(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	var req CreateConnectionRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := intake.CheckName("name", req.Name); err != nil {
		return err
	}
	if req.Provider == "" {
		return intake.Errorf(intake.EINVALID, "provider is required (one of %s)", strings.Join(provider.Names(), ", "))
	}
	adapter, ok := provider.Lookup(req.Provider)
	if !ok {
		return intake.Errorf(intake.EINVALID, "unknown provider %q (one of %s)", truncate(req.Provider, 64), strings.Join(provider.Names(), ", "))
	}
	config, err := provider.CheckConfig(adapter, req.Config)
	if err != nil {
		return err
	}
	if err := provider.CheckSecrets(req.Provider, req.Secrets); err != nil {
		return err
	}
	orgID, err := orgFor(sc, req.OrgID)
	if err != nil {
		return err
	}
	c := intake.Connection{
		// The id is made first because the sealed secrets are bound to it.
		ID:        intake.NewID(),
		OrgID:     orgID,
		Provider:  req.Provider,
		Name:      req.Name,
		Config:    config,
		CreatedAt: s.clock.Now().UTC(),
	}
	if c.SealedSecrets, err = s.sealer.SealConnectionSecrets(c, nonNil(req.Secrets)); err != nil {
		return err
	}
	if err := s.store.CreateConnection(r.Context(), c); err != nil {
		return err
	}
	s.audit(r, c.OrgID, "connection.create", "connection", c.ID, "provider=", c.Provider, " secrets=", len(req.Secrets))
	writeJSON(w, http.StatusCreated, s.connectionView(r.Context(), c))
	return nil
}

// replaceSecrets replaces a connection's list of signing secrets; during a
// provider's rotation the old and the new are given together.
func (s *Server) replaceSecrets(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req SecretsRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, err := s.store.Connection(r.Context(), sc, id)
	if err != nil {
		return err
	}
	if err := provider.CheckSecrets(c.Provider, req.Secrets); err != nil {
		return err
	}
	if c.SealedSecrets, err = s.sealer.SealConnectionSecrets(c, nonNil(req.Secrets)); err != nil {
		return err
	}
	if err := s.store.ReplaceConnectionSecrets(r.Context(), sc, c.ID, c.SealedSecrets); err != nil {
		return err
	}
	s.audit(r, c.OrgID, "connection.secrets.replace", "connection", c.ID, "secrets=", len(req.Secrets))
	writeJSON(w, http.StatusOK, s.connectionView(r.Context(), c))
	return nil
}

// adoptHandshakeSecret adds to a connection the signing secret its
// provider handed over in a recorded handshake (ops.AdoptHandshakeSecret).
func (s *Server) adoptHandshakeSecret(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req AdoptSecretRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, added, err := s.ops.AdoptHandshakeSecret(r.Context(), sc, id, req.MessageID)
	if err != nil {
		return err
	}
	if added {
		s.audit(r, c.OrgID, "connection.secrets.adopt", "connection", c.ID, "message=", req.MessageID)
	}
	writeJSON(w, http.StatusOK, s.connectionView(r.Context(), c))
	return nil
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	conns, err := s.store.ListConnections(r.Context(), sc)
	if err != nil {
		return err
	}
	out := List[Connection]{Items: make([]Connection, 0, len(conns))}
	for _, c := range conns {
		out.Items = append(out.Items, s.connectionView(r.Context(), c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getConnection(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := s.store.Connection(r.Context(), sc, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.connectionView(r.Context(), c))
	return nil
}

// connectionView shows a connection without its secrets. Counting them means
// opening them; the plaintext goes no further than this function.
func (s *Server) connectionView(ctx context.Context, c intake.Connection) Connection {
	out := Connection{
		ID:        c.ID,
		OrgID:     c.OrgID,
		Provider:  c.Provider,
		Name:      c.Name,
		Config:    c.Config,
		CreatedAt: c.CreatedAt.UTC(),
	}
	if len(out.Config) == 0 {
		out.Config = json.RawMessage("{}")
	}
	secrets, err := s.sealer.ConnectionSecrets(c)
	if err != nil {
		s.log.WarnContext(ctx, "connection secrets do not open; was the master key changed?", "connection_id", c.ID)
		return out
	}
	n := len(secrets)
	out.SecretCount = &n
	return out
}

// nonNil keeps an empty secret list sealed as [] rather than null.
func nonNil(secrets []string) []string {
	if secrets == nil {
		return []string{}
	}
	return secrets
}
