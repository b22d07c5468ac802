// Package oidctest runs a real OpenID provider for tests: zitadel's op
// package over its example in-memory storage, with people who have groups
// (in the ID token's "groups" claim) and a plain username-and-password form
// as its sign-in page. Only tests import it.
package oidctest

import (
	"context"
	"crypto/rand"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// Person is someone who can sign in at the provider.
type Person struct {
	Username, Password string
	Subject            string // the provider's id for them, the ID token's sub
	Email              string
	// EmailUnverified: the provider does not vouch for Email; its ID
	// token then carries the email without email_verified.
	EmailUnverified bool
	Groups          []string
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer URL: http://<host>:<port>/.
	Issuer string
	store  *store
}

// Start runs a provider on a free port of the loopback address, named
// host in its issuer (e.g. "localhost", so that a browser sees it as
// another site than a server at 127.0.0.1), until t ends.
func Start(t testing.TB, host string, people ...Person) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	issuer := "http://" + net.JoinHostPort(host, port) + "/"

	users := users{}
	s := &store{clients: map[string]registered{}, groups: map[string][]string{}}
	for _, p := range people {
		users[p.Subject] = &storage.User{ID: p.Subject, Username: p.Username, Password: p.Password, Email: p.Email,
			EmailVerified: !p.EmailUnverified, PreferredLanguage: language.English}
		s.groups[p.Subject] = p.Groups
	}
	s.Storage = storage.NewStorageWithClients(users, map[string]*storage.Client{})
	cfg := &op.Config{CodeMethodS256: true, AuthMethodPost: true, SupportedUILocales: []language.Tag{language.English}}
	rand.Read(cfg.CryptoKey[:])
	provider, err := op.NewProvider(cfg, s, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	login := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	mux.HandleFunc("GET /login/username", func(w http.ResponseWriter, r *http.Request) {
		loginForm.Execute(w, map[string]string{"ID": r.URL.Query().Get("authRequestID")})
	})
	mux.HandleFunc("POST /login/username", login.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PostFormValue("id")
		if err := s.CheckUsernamePassword(r.PostFormValue("username"), r.PostFormValue("password"), id); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			loginForm.Execute(w, map[string]string{"ID": id, "Error": err.Error()})
			return
		}
		http.Redirect(w, r, op.AuthCallbackURL(provider)(r.Context(), id), http.StatusFound)
	}))
	mux.Handle("/", provider)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &Provider{Issuer: issuer, store: s}
}

// Register adds a confidential web client that may send people back to
// redirectURIs.
func (p *Provider) Register(clientID, secret string, redirectURIs ...string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.clients[clientID] = registered{Client: storage.WebClient(clientID, secret, redirectURIs...), secret: secret}
}

var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Test identity provider</title></head>
<body><h1>Test identity provider</h1>
<form method="post" action="/login/username">
<input type="hidden" name="id" value="{{.ID}}">
<label>Username <input id="username" name="username"></label>
<label>Password <input id="password" name="password" type="password"></label>
<p id="error">{{.Error}}</p>
<button type="submit" id="login">Sign in</button>
</form></body></html>`))

// store is the example storage with clients registered at any time and
// groups in ID tokens.
type store struct {
	*storage.Storage
	mu      sync.Mutex
	clients map[string]registered
	groups  map[string][]string // by subject
}

// registered is a client whose ID tokens carry the person's claims (email,
// groups) themselves, as identity providers are usually set up for a
// console's sign-in.
type registered struct {
	*storage.Client
	secret string
}

func (registered) IDTokenUserinfoClaimsAssertion() bool { return true }

func (s *store) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("client %q not found", id)
	}
	return c, nil
}

func (s *store) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; !ok || c.secret != secret {
		return fmt.Errorf("client %q: wrong secret", id)
	}
	return nil
}

func (s *store) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	if g := s.groups[req.GetSubject()]; len(g) > 0 {
		info.AppendClaims("groups", g)
	}
	return nil
}

// users is the provider's people by subject.
type users map[string]*storage.User

func (u users) GetUserByID(id string) *storage.User { return u[id] }
func (u users) GetUserByUsername(name string) *storage.User {
	for _, p := range u {
		if p.Username == name {
			return p
		}
	}
	return nil
}
func (users) ExampleClientID() string { return "service" }
