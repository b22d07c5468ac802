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

// sessions signs, checks and revokes session cookies.
type sessions struct {
	key       []byte
	ttl       time.Duration
	staffHash []byte
	store     intake.Store

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
	hash := token.Hash(tok)
	s := &session{KeyHash: hash, Nonce: randomToken(), Expires: now.Add(ss.ttl).Unix()}
	if ss.staffHash != nil && subtle.ConstantTimeCompare(hash, ss.staffHash) == 1 {
		s.Actor, s.staff = "staff", true
		return s, nil
	}
	org, err := ss.store.OrgByKeyHash(ctx, hash)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		return nil, intake.Errorf(intake.EUNAUTHORIZED, "that token is not valid")
	}
	if err != nil {
		return nil, err
	}
	s.OrgID, s.orgName, s.Actor = org.ID, org.Name, keyActor(tok)
	return s, nil
}

// keyActor names an org key in the audit log as the admin API does: its
// first characters, enough to tell keys apart, too few to use one.
func keyActor(tok string) string {
	if len(tok) > 10 {
		tok = tok[:10]
	}
	return "key:" + tok + "…"
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
	if s.OrgID == "" {
		if ss.staffHash == nil || subtle.ConstantTimeCompare(s.KeyHash, ss.staffHash) != 1 {
			return nil, invalid // the staff token changed
		}
		s.staff = true
		return &s, nil
	}
	org, err := ss.store.OrgByKeyHash(ctx, s.KeyHash)
	if intake.ErrorCode(err) == intake.ENOTFOUND || (err == nil && org.ID != s.OrgID) {
		return nil, invalid // the key was revoked
	}
	if err != nil {
		return nil, err
	}
	s.orgName = org.Name
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
