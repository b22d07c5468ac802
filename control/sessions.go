package control

import (
	"context"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/token"
)

// SignIn admits a token (the staff token or an org's API key) to the
// console, as SignInPerson admits a person: the session s (its cookie
// hash, CSRF token and times set by the caller) is recorded for the
// token's caller, keeping only the token's SHA-256, with an audit entry,
// in one transaction.
func (p *Plane) SignIn(ctx context.Context, client, tok string, s intake.ConsoleSession) (Caller, error) {
	c, err := p.Authenticate(ctx, client, tok)
	if err != nil {
		return Caller{}, err
	}
	s.KeyHash, s.OrgID, s.Actor, s.Subject, s.Email, s.Role = token.Hash(strings.TrimSpace(tok)), c.Scope.OrgID, c.Actor, "", "", ""
	given := "staff"
	if !c.Staff() {
		given = "role=" + string(c.Role)
	}
	if err := p.store.CreateSession(ctx, s, p.entry(c, c.Scope.OrgID, "session.sign_in", "token", c.Actor, given)); err != nil {
		return Caller{}, err
	}
	return c, nil
}

// Session finds the console session whose cookie value hashes to idHash:
// unexpired at now, not signed out, its org not deleted. Anyone may send
// any cookie, so it is looked up as a credential is (LookUp).
func (p *Plane) Session(ctx context.Context, client string, idHash []byte, now time.Time) (intake.ConsoleSession, error) {
	var s intake.ConsoleSession
	err := p.LookUp(ctx, client, func(ctx context.Context) (err error) {
		s, err = p.store.SessionByHash(ctx, idHash, now)
		return err
	})
	return s, err
}

// SignOut ends c's console session, whose cookie value hashes to idHash,
// on every process at at, with an audit entry.
func (p *Plane) SignOut(ctx context.Context, c Caller, idHash []byte, at time.Time) error {
	if err := c.may(intake.RoleViewer); err != nil {
		return err
	}
	return p.store.RevokeSession(ctx, idHash, at, p.entry(c, c.Scope.OrgID, "session.sign_out", "session", c.Actor))
}
