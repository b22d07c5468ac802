package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/token"
)

// cookieName is the console's session cookie, scoped to /console.
const cookieName = "intake_console"

// session is who is signed in. The cookie carries only a random value; the
// store keeps the session under its SHA-256, so every process of a
// deployment accepts it, a restart keeps it, and a sign-out on any process
// ends it on all. The credential itself is never stored, only its SHA-256,
// and every request checks that it still works (a revoked key ends its
// sessions at once).
type session struct {
	OrgID string // "" for staff
	Actor string
	Role  intake.Role // an org's session: what it may do there

	idHash  []byte
	csrf    string
	staff   bool
	orgName string
}

// scope is the session's view of the store.
func (s *session) scope() intake.Scope { return intake.Scope{OrgID: s.OrgID} }

// caller is who the session acts as in the control plane.
func (s *session) caller() control.Caller {
	return control.Caller{Scope: s.scope(), Actor: s.Actor, Role: s.Role}
}

// sessions signs in, checks and signs out sessions, through the control
// plane.
type sessions struct {
	ttl    time.Duration
	ctl    *control.Plane
	limits signInLimits
}

// login checks a token and records a new session for it, returning the
// value its cookie carries.
func (ss *sessions) login(ctx context.Context, client, tok string, now time.Time) (string, error) {
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", intake.Errorf(intake.EUNAUTHORIZED, "enter the staff token or an org's API key")
	}
	value := randomToken()
	row := intake.ConsoleSession{IDHash: token.Hash(value), CSRF: randomToken(), CreatedAt: now, ExpiresAt: now.Add(ss.ttl)}
	if _, err := ss.ctl.SignIn(ctx, client, tok, row); err != nil {
		return "", err
	}
	return value, nil
}

// open finds the session a cookie client sent names, unexpired, not
// signed out, and with a credential that still works. Any caller may send
// any cookie: it is looked up as a credential is (control.Plane.Session).
func (ss *sessions) open(ctx context.Context, client, value string, now time.Time) (*session, error) {
	invalid := intake.Errorf(intake.EUNAUTHORIZED, "sign in again")
	if value == "" || len(value) > 64 {
		return nil, invalid
	}
	row, err := ss.ctl.Session(ctx, client, token.Hash(value), now)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		return nil, invalid
	}
	if err != nil {
		return nil, err
	}
	s := &session{OrgID: row.OrgID, Actor: row.Actor, idHash: row.IDHash, csrf: row.CSRF, orgName: row.OrgName}
	if row.Subject != "" {
		// A person holds no key: what the people map gave them at sign-in
		// lasts the session.
		s.staff, s.Role = s.OrgID == "", row.Role
		return s, nil
	}
	// The credential is judged again: staff's is the server's to judge, and
	// an org key's role is the one it has now.
	who, err := ss.ctl.AuthenticateHash(ctx, client, row.KeyHash, row.Actor)
	switch {
	case intake.ErrorCode(err) == intake.EUNAUTHORIZED, err == nil && who.Scope.OrgID != s.OrgID:
		return nil, invalid // the key was revoked, or the staff token changed
	case err != nil:
		return nil, err
	}
	s.staff, s.Role = who.Staff(), who.Role
	return s, nil
}

// csrf is the session's CSRF token: its own, so a form from one session is
// refused in another.
func (ss *sessions) csrf(s *session) string { return s.csrf }

// checkCSRF compares a form's token with the session's in constant time.
func (ss *sessions) checkCSRF(s *session, got string) bool {
	return s.csrf != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// revoke ends a session on every process.
func (ss *sessions) revoke(ctx context.Context, s *session, now time.Time) error {
	return ss.ctl.SignOut(ctx, s.caller(), s.idHash, now)
}

// signInLimits holds each client address to a few sign-in tries a minute,
// so tokens cannot be guessed at speed. Behind a proxy every client shares
// its address, and so its budget.
type signInLimits struct {
	mu  sync.Mutex
	ips map[string]*rate.Limiter
}

const (
	signInsPerMinute = 10
	signInBurst      = 10
)

// allow spends one try of r's client at now.
func (l *signInLimits) allow(r *http.Request, now time.Time) bool {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ips == nil || len(l.ips) > 10_000 {
		l.ips = map[string]*rate.Limiter{} // a flood of addresses costs bounded memory
	}
	lim := l.ips[ip]
	if lim == nil {
		lim = rate.NewLimiter(rate.Every(time.Minute/signInsPerMinute), signInBurst)
		l.ips[ip] = lim
	}
	return lim.AllowN(now, 1)
}

// setCookie writes the session cookie: HttpOnly, SameSite=Strict, Secure
// when the console is served over TLS (directly or behind an https public
// URL).
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: value, Path: "/console", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || c.httpsURL,
	})
}

// randomToken is 256 random bits, base64url.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
