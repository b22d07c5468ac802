package control

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
	"github.com/intakehq/intake/provider"
)

// ShownMessage is a message as operators read it: its headers and query
// without credentials (redact's list, and the headers its connection
// names as its credential, Okta's auth_header), how many headers that hid,
// and whether it is a handshake whose provider hands its signing secret
// over in it (Asana), so the connection can adopt it.
type ShownMessage struct {
	intake.Message
	HiddenHeaders   int
	HandshakeSecret bool
}

// Message reads one message as operators see it.
func (p *Plane) Message(ctx context.Context, c Caller, id string) (ShownMessage, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return ShownMessage{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return ShownMessage{}, err
	}
	m, err := p.store.Message(ctx, c.Scope, id)
	if err != nil {
		return ShownMessage{}, err
	}
	cn, err := p.store.Connection(ctx, c.Scope, m.ConnectionID)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		cn, err = intake.Connection{}, nil // deleted since: the word list alone applies
	}
	if err != nil {
		return ShownMessage{}, err
	}
	s := ShownMessage{Message: m}
	if a, ok := provider.Lookup(cn.Provider); ok {
		if hs, ok := a.(provider.HandshakeSecreter); ok {
			s.HandshakeSecret = hs.HandshakeSecret(&provider.Request{Method: m.Method, Header: m.Header}) != ""
		}
	}
	s.Header = redact.Headers(m.Header, provider.CredentialHeaders(cn)...)
	s.HiddenHeaders = len(m.Header) - len(s.Header)
	s.Query = redact.Query(m.Query)
	return s, nil
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
