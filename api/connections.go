package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/provider"
)

// Secret limits: generous for any provider, small enough to refuse a paste
// of the wrong file.
const (
	maxSecrets      = 10
	maxSecretLength = 4096
)

// noneProvider verifies nothing, so it is the one provider that takes no
// secrets.
const noneProvider = "none"

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
	config, err := checkConfig(adapter, req.Config)
	if err != nil {
		return err
	}
	if err := checkSecrets(req.Provider, req.Secrets); err != nil {
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
	if err := checkSecrets(c.Provider, req.Secrets); err != nil {
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

// checkConfig validates a connection's provider settings with its adapter and
// returns them compacted; absent settings are {}.
func checkConfig(adapter provider.Adapter, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return nil, intake.Errorf(intake.EINVALID, "config must be a JSON object")
	}
	cfg, err := provider.ParseConfig(raw)
	if err != nil {
		return nil, intake.Errorf(intake.EINVALID, "%v", err)
	}
	if err := adapter.ValidateConfig(cfg); err != nil {
		return nil, intake.Errorf(intake.EINVALID, "config for %s: %v", adapter.Name(), err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, intake.Errorf(intake.EINVALID, "config: %v", err)
	}
	return buf.Bytes(), nil
}

// checkSecrets requires at least one secret for every provider that verifies
// signatures, and none for the provider that does not.
func checkSecrets(providerName string, secrets []string) error {
	if providerName == noneProvider {
		if len(secrets) > 0 {
			return intake.Errorf(intake.EINVALID, "provider none verifies nothing and takes no secrets")
		}
		return nil
	}
	if len(secrets) == 0 {
		return intake.Errorf(intake.EINVALID, "provider %s needs at least one secret", providerName)
	}
	if len(secrets) > maxSecrets {
		return intake.Errorf(intake.EINVALID, "at most %d secrets may be active at once", maxSecrets)
	}
	for i, v := range secrets {
		if strings.TrimSpace(v) == "" {
			return intake.Errorf(intake.EINVALID, "secrets[%d] is empty", i)
		}
		if len(v) > maxSecretLength {
			return intake.Errorf(intake.EINVALID, "secrets[%d] is longer than %d bytes", i, maxSecretLength)
		}
	}
	return nil
}

// nonNil keeps an empty secret list sealed as [] rather than null.
func nonNil(secrets []string) []string {
	if secrets == nil {
		return []string{}
	}
	return secrets
}
