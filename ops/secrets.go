package ops

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/provider"
)

// AdoptHandshakeSecret adds to a connection the signing secret its provider
// handed over in a recorded handshake (Asana's X-Hook-Secret). The secret
// goes from the stored request into the sealed list without being shown to
// anyone; the request's header stays hidden as every credential is. added
// is false when the connection already had it.
func (o *Ops) AdoptHandshakeSecret(ctx context.Context, sc intake.Scope, connectionID, messageID string) (c intake.Connection, added bool, err error) {
	if !intake.ValidID(messageID) {
		return c, false, intake.Errorf(intake.EINVALID, "message_id must be a message's id")
	}
	if c, err = o.Store.Connection(ctx, sc, connectionID); err != nil {
		return c, false, err
	}
	a, _ := provider.Lookup(c.Provider)
	hs, ok := a.(provider.HandshakeSecreter)
	if !ok {
		return c, false, intake.Errorf(intake.EINVALID, "provider %s does not hand its secret over in a handshake; set its secrets instead", c.Provider)
	}
	m, err := o.Store.Message(ctx, sc, messageID)
	if err != nil {
		return c, false, err
	}
	if m.ConnectionID != c.ID {
		return c, false, intake.Errorf(intake.EINVALID, "message %s was not received for connection %s", m.ID, c.ID)
	}
	body, header, err := o.Store.MessageBody(ctx, sc, m.ID)
	if err != nil {
		return c, false, err
	}
	secret := hs.HandshakeSecret(&provider.Request{Method: m.Method, Header: header, Body: body, ReceivedAt: m.ReceivedAt})
	if secret == "" {
		return c, false, intake.Errorf(intake.EINVALID, "message %s is not a %s handshake carrying a secret", m.ID, c.Provider)
	}
	opened, err := o.Sealer.ConnectionSecrets(c)
	if err != nil {
		return c, false, err
	}
	secrets := make([]string, 0, len(opened)+1)
	for _, s := range opened {
		if string(s) == secret {
			return c, false, nil
		}
		secrets = append(secrets, string(s))
	}
	secrets = append(secrets, secret)
	if err := provider.CheckSecrets(c.Provider, secrets); err != nil {
		return c, false, err
	}
	if c.SealedSecrets, err = o.Sealer.SealConnectionSecrets(c, secrets); err != nil {
		return c, false, err
	}
	if err := o.Store.ReplaceConnectionSecrets(ctx, sc, c.ID, c.SealedSecrets); err != nil {
		return c, false, err
	}
	return c, true, nil
}
