package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/token"
)

// SingleSignOn is the console's OpenID Connect client (DESIGN §17): people
// sign in at their identity provider with the authorization code flow,
// PKCE (S256), state and nonce, and the control plane maps the groups the
// provider vouches for to staff, or to an org and a role.
type SingleSignOn struct {
	Issuer       string // the provider's issuer URL, as its discovery document names it
	ClientID     string
	ClientSecret string // "" for a public client, which PKCE still protects
	// Claim is the ID token claim that holds a person's groups: a list of
	// strings, or one string (default "groups").
	Claim string
	// Scopes are asked for beside openid (nil: email).
	Scopes []string
	// RedirectURL is the callback registered at the provider; "": the
	// console's /console/login/oidc/callback at the address the browser
	// used.
	RedirectURL string
	// Key signs the short-lived cookie that carries a sign-in's state,
	// nonce and PKCE verifier between the redirect and the callback; every
	// process of a deployment needs the same one (nil: a key of this
	// process alone).
	Key []byte
	// HTTPClient talks to the provider (nil: one with a 10 s timeout).
	HTTPClient *http.Client
}

// Paths of the single sign-on flow.
const (
	ssoStartPath    = "/console/login/oidc"
	ssoCallbackPath = "/console/login/oidc/callback"
	// flowCookie carries one sign-in's secrets from the redirect to the
	// callback, for ssoFlowTTL at most.
	flowCookie = "intake_oidc"
	ssoFlowTTL = 10 * time.Minute
)

// sso is the running client: the provider is discovered at the first
// sign-in and kept once found, so the console starts while the provider is
// down and signs people in once it is up.
type sso struct {
	cfg    SingleSignOn
	client *http.Client
	key    []byte

	mu       sync.Mutex
	provider *oidc.Provider
}

func newSSO(cfg SingleSignOn) *sso {
	s := &sso{cfg: cfg, client: cfg.HTTPClient, key: cfg.Key}
	if s.cfg.Claim == "" {
		s.cfg.Claim = "groups"
	}
	scopes := cfg.Scopes
	if scopes == nil {
		scopes = []string{"email"}
	}
	s.cfg.Scopes = []string{oidc.ScopeOpenID}
	for _, sc := range scopes {
		if sc = strings.TrimSpace(sc); sc != "" && !slices.Contains(s.cfg.Scopes, sc) {
			s.cfg.Scopes = append(s.cfg.Scopes, sc)
		}
	}
	if s.client == nil {
		s.client = &http.Client{Timeout: 10 * time.Second}
	}
	if len(s.key) == 0 {
		s.key = make([]byte, 32)
		rand.Read(s.key)
	}
	return s
}

// discover returns the provider, reading its discovery document once.
func (s *sso) discover(ctx context.Context) (*oidc.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider != nil {
		return s.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.client), s.cfg.Issuer)
	if err != nil {
		return nil, &intake.Error{Code: intake.EUNAVAILABLE, Message: "the identity provider cannot be reached; try again shortly, or sign in with a token", Err: err}
	}
	s.provider = p
	return p, nil
}

// oauth is the code flow's configuration for a callback address.
func (s *sso) oauth(p *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: s.cfg.Scopes}
}

// redirectURL is where the provider sends the browser back.
func (c *Console) redirectURL(r *http.Request) string {
	if c.sso.cfg.RedirectURL != "" {
		return c.sso.cfg.RedirectURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + ssoCallbackPath
}

// flow is one sign-in in progress, kept in the browser that started it.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Redirect string `json:"r"`
	Next     string `json:"x"`
	Expires  int64  `json:"e"` // Unix seconds
}

// seal encodes f with its signature.
func (s *sso) seal(f flow) string {
	b, _ := json.Marshal(f)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.sign(payload))
}

// open decodes a flow cookie that this deployment signed and that has not
// expired at now.
func (s *sso) open(value string, now time.Time) (flow, bool) {
	var f flow
	payload, sig, ok := strings.Cut(value, ".")
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(got, s.sign(payload)) {
		return f, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &f) != nil || now.Unix() >= f.Expires {
		return flow{}, false
	}
	return f, true
}

func (s *sso) sign(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("intake console sign-in flow\x00" + payload))
	return m.Sum(nil)
}

// setFlowCookie keeps a flow for the callback. SameSite=Lax: the provider
// sends the browser back with a top-level GET from its own site, which a
// Strict cookie would not survive.
func (c *Console) setFlowCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: flowCookie, Value: value, Path: ssoStartPath, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || c.httpsURL,
	})
}

// startSSO sends the browser to the provider with a fresh state, nonce and
// PKCE challenge, and keeps their secrets in a signed cookie.
func (c *Console) startSSO(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	next := safeNext(r.URL.Query().Get("next"))
	p, err := c.sso.discover(r.Context())
	if err != nil {
		c.refuseSSO(w, r, next, err)
		return
	}
	f := flow{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(), Redirect: c.redirectURL(r),
		Next: next, Expires: c.clock.Now().Add(ssoFlowTTL).Unix()}
	c.setFlowCookie(w, r, c.sso.seal(f), int(ssoFlowTTL.Seconds()))
	to := c.sso.oauth(p, f.Redirect).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// finishSSO is where the provider sends the browser back: the answer must
// belong to the flow this browser started, the code is exchanged with its
// verifier, and the ID token must come from the issuer, for this client,
// unexpired, signed with one of the issuer's keys, and carry the flow's
// nonce. Only then does the control plane map the person and record the
// session; any refusal shows the sign-in page and makes no session. The
// token form's limit on tries does not apply: nothing here can be guessed
// (the provider judges the person), and behind a proxy every person of a
// company would share one budget.
func (c *Console) finishSSO(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	now := c.clock.Now()
	var f flow
	ok := false
	if ck, err := r.Cookie(flowCookie); err == nil {
		f, ok = c.sso.open(ck.Value, now)
	}
	c.setFlowCookie(w, r, "", -1) // one answer per flow
	if !ok {
		c.refuseSSO(w, r, "/console/", intake.Errorf(intake.EUNAUTHORIZED,
			"This sign-in expired or was started in another browser; sign in again."))
		return
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		c.refuseSSO(w, r, f.Next, intake.Errorf(intake.EUNAUTHORIZED,
			"The identity provider's answer does not belong to this sign-in (its state does not match); sign in again."))
		return
	}
	if e := q.Get("error"); e != "" {
		why := e
		if d := q.Get("error_description"); d != "" {
			why += ": " + d
		}
		c.refuseSSO(w, r, f.Next, intake.Errorf(intake.EUNAUTHORIZED, "The identity provider refused the sign-in (%.240s).", why))
		return
	}
	who, err := c.person(r.Context(), f, q.Get("code"))
	if err != nil {
		c.refuseSSO(w, r, f.Next, err)
		return
	}
	value, err := c.sessions.signInPerson(r.Context(), who, now)
	if err != nil {
		c.refuseSSO(w, r, f.Next, err)
		return
	}
	c.setCookie(w, r, value, int(c.sessions.ttl.Seconds()))
	// The session cookie is SameSite=Strict, and this answer ends a visit
	// that came from the provider's site: a redirect would carry the
	// browser on as that visit, without the cookie. A page of the console's
	// own sends it on as a visit of this site.
	w.Header().Set("Refresh", "0; url="+f.Next)
	c.render(w, r, nil, http.StatusOK, "signed-in", "Signed in", signedInView{Next: f.Next, Actor: who.Actor()})
}

// person exchanges the code for tokens and reads who the verified ID token
// names.
func (c *Console) person(ctx context.Context, f flow, code string) (intake.Person, error) {
	if code == "" {
		return intake.Person{}, intake.Errorf(intake.EUNAUTHORIZED, "The identity provider sent no code; sign in again.")
	}
	p, err := c.sso.discover(ctx)
	if err != nil {
		return intake.Person{}, err
	}
	ctx = oidc.ClientContext(ctx, c.sso.client)
	tok, err := c.sso.oauth(p, f.Redirect).Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var refused *oauth2.RetrieveError
		if errors.As(err, &refused) {
			return intake.Person{}, &intake.Error{Code: intake.EUNAUTHORIZED, Err: err,
				Message: "The identity provider refused to exchange the sign-in's code; sign in again."}
		}
		return intake.Person{}, &intake.Error{Code: intake.EUNAVAILABLE, Err: err,
			Message: "The identity provider cannot be reached; try again shortly, or sign in with a token."}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return intake.Person{}, intake.Errorf(intake.EUNAUTHORIZED, "The identity provider sent no ID token.")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: c.sso.cfg.ClientID, Now: c.clock.Now}).Verify(ctx, raw)
	if err != nil {
		return intake.Person{}, &intake.Error{Code: intake.EUNAUTHORIZED, Err: err, Message: "The ID token was refused: " + idTokenProblem(err)}
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return intake.Person{}, intake.Errorf(intake.EUNAUTHORIZED, "The ID token was refused: it was not issued for this sign-in (nonce).")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return intake.Person{}, &intake.Error{Code: intake.EUNAUTHORIZED, Err: err, Message: "The ID token's claims cannot be read."}
	}
	who := intake.Person{Subject: idt.Subject, Groups: claimStrings(claims[c.sso.cfg.Claim])}
	// An address the provider does not say it verified could be anyone's:
	// without email_verified true (a string "true" from some providers) the
	// person is named by their subject. Groups, not the email, give access.
	if email, _ := claims["email"].(string); email != "" && (claims["email_verified"] == true || claims["email_verified"] == "true") {
		who.Email = email
	}
	return who, nil
}

// idTokenProblem says which check an ID token failed, in a person's words.
func idTokenProblem(err error) string {
	var expired *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &expired):
		return "it has expired."
	case strings.Contains(msg, "issued by a different provider"):
		return "it was issued by another identity provider."
	case strings.Contains(msg, "audience"):
		return "it was issued for another application."
	case strings.Contains(msg, "signature"):
		return "its signature does not verify with the identity provider's keys."
	}
	return "it is not valid."
}

// claimStrings reads a claim that is a list of strings or one string.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// refuseSSO shows the sign-in page with why single sign-on did not work.
func (c *Console) refuseSSO(w http.ResponseWriter, r *http.Request, next string, err error) {
	status, msg := control.HTTPStatus(err), intake.ErrorMessage(err)
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		c.log.Info("console single sign-on refused", "reason", msg, "err", err)
	case http.StatusServiceUnavailable:
		c.log.Warn("console single sign-on: unavailable", "err", err)
		w.Header().Set("Retry-After", control.RetryAfterSeconds)
	default:
		c.log.Error("console single sign-on", "err", err)
		status, msg = http.StatusInternalServerError, "Single sign-on did not work. The server log has the details."
	}
	c.render(w, r, nil, status, "login", "Sign in", c.loginView(next, msg))
}

// signInPerson records a session for a person the provider vouched for,
// if the control plane admits them, returning its cookie's value.
func (ss *sessions) signInPerson(ctx context.Context, who intake.Person, now time.Time) (string, error) {
	value := randomToken()
	row := intake.ConsoleSession{IDHash: token.Hash(value), CSRF: randomToken(), CreatedAt: now, ExpiresAt: now.Add(ss.ttl)}
	if _, err := ss.ctl.SignInPerson(ctx, who, row); err != nil {
		return "", err
	}
	return value, nil
}

// signedInView is the page that carries a person on after sign-in.
type signedInView struct {
	Next  string
	Actor string
}

// loginView is the sign-in page's data.
func (c *Console) loginView(next, msg string) loginView {
	v := loginView{Next: next, Error: msg, SingleSignOn: c.sso != nil}
	if v.SingleSignOn {
		v.SSOHref = ssoStartPath + "?next=" + url.QueryEscape(next)
	}
	return v
}
