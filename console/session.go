package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/token"
)

// cookieName is the console's session cookie, scoped to /console.
const cookieName = "intake_console"

// session is who is signed in. It travels in the cookie, signed, so any
// process holding the same key accepts it; the credential itself never
// does: only its SHA-256, the value the store already keeps in its place,
// so every request checks that the key still works (a revoked key ends its
// sessions at once).
type session struct {
	OrgID   string `json:"o,omitempty"` // "" for staff
	KeyHash []byte `json:"k"`
	Actor   string `json:"a"`
	Nonce   string `json:"n"` // the CSRF token is derived from it
	Expires int64  `json:"e"`

	staff   bool
	orgName string
}

// scope is the session's view of the store.
func (s *session) scope() intake.Scope { return intake.Scope{OrgID: s.OrgID} }

// caller is who the session acts as in the control plane.
func (s *session) caller() control.Caller { return control.Caller{Scope: s.scope(), Actor: s.Actor} }

// sessions signs, checks and revokes session cookies.
type sessions struct {
	key []byte
	ttl time.Duration
	ctl *control.Plane

	mu sync.Mutex
	// revoked holds the nonces of sessions signed out on this process until
	// they would have expired anyway.
	revoked map[string]int64
}

// login checks a token and returns a new session for it.
func (ss *sessions) login(ctx context.Context, tok string, now time.Time) (*session, error) {
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return nil, intake.Errorf(intake.EUNAUTHORIZED, "enter the staff token or an org's API key")
	}
	who, err := ss.ctl.Authenticate(ctx, tok)
	if err != nil {
		return nil, err
	}
	s := &session{KeyHash: token.Hash(tok), Nonce: randomToken(), Expires: now.Add(ss.ttl).Unix(),
		OrgID: who.Scope.OrgID, Actor: who.Actor, staff: who.Staff(), orgName: who.OrgName}
	return s, nil
}

// cookie encodes a session as "<payload>.<mac>", both base64url.
func (ss *sessions) cookie(s *session) string {
	payload, err := json.Marshal(s)
	if err != nil {
		panic(err) // a struct of strings and bytes always marshals
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(ss.mac("session:"+p))
}

// open checks a cookie's signature and expiry, then that its credential
// still works, and returns the session.
func (ss *sessions) open(ctx context.Context, value string, now time.Time) (*session, error) {
	invalid := intake.Errorf(intake.EUNAUTHORIZED, "sign in again")
	p, mac, ok := strings.Cut(value, ".")
	if !ok {
		return nil, invalid
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, ss.mac("session:"+p)) {
		return nil, invalid
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return nil, invalid
	}
	var s session
	if json.Unmarshal(payload, &s) != nil || now.Unix() >= s.Expires || s.Nonce == "" || ss.isRevoked(s.Nonce) {
		return nil, invalid
	}
	// The credential must still work: a changed staff token or a revoked
	// key ends its sessions at once.
	who, err := ss.ctl.AuthenticateHash(ctx, s.KeyHash, s.Actor)
	if intake.ErrorCode(err) == intake.EUNAUTHORIZED || (err == nil && who.Scope.OrgID != s.OrgID) {
		return nil, invalid
	}
	if err != nil {
		return nil, err
	}
	s.staff, s.orgName = who.Staff(), who.OrgName
	return &s, nil
}

// csrf is the session's CSRF token: bound to the session, so a form from
// one session is refused in another.
func (ss *sessions) csrf(s *session) string {
	return base64.RawURLEncoding.EncodeToString(ss.mac("csrf:" + s.Nonce))
}

// checkCSRF compares a form's token with the session's in constant time.
func (ss *sessions) checkCSRF(s *session, got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf(s))) == 1
}

// revoke ends a session on this process; other processes end it at expiry.
func (ss *sessions) revoke(s *session, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.revoked == nil {
		ss.revoked = map[string]int64{}
	}
	for n, exp := range ss.revoked {
		if exp <= now.Unix() {
			delete(ss.revoked, n)
		}
	}
	ss.revoked[s.Nonce] = s.Expires
}

func (ss *sessions) isRevoked(nonce string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.revoked[nonce]
	return ok
}

func (ss *sessions) mac(msg string) []byte {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte(msg))
	return m.Sum(nil)
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

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
