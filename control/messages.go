package control

import (
	"context"
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
	"github.com/intakehq/intake/provider"
)

// MessageHeaders are a message's headers as operators see them: without
// credentials, those of redact's word list and those the message's
// connection names as its credential (Okta's auth_header). m was read in
// c's scope.
func (p *Plane) MessageHeaders(ctx context.Context, c Caller, m intake.Message) (http.Header, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	names, err := p.credentialHeaders(ctx, c.Scope, m.ConnectionID)
	if err != nil {
		return nil, err
	}
	return redact.Headers(m.Header, names...), nil
}

// credentialHeaders are the header names a connection makes credentials;
// none once it is deleted: the word list alone applies.
func (p *Plane) credentialHeaders(ctx context.Context, sc intake.Scope, connectionID string) ([]string, error) {
	cn, err := p.store.Connection(ctx, sc, connectionID)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return provider.CredentialHeaders(cn), nil
}
