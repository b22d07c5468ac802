package console_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/console"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/oidctest"
	"github.com/intakehq/intake/internal/testkit"
)

const (
	ssoClientID     = "intake-console"
	ssoClientSecret = "console-client-secret"
)

// people is the identity provider's people, and the map from their groups.
var (
	alice = oidctest.Person{Username: "alice", Password: "alice-pw", Subject: "248289761001", Email: "alice@example.com",
		Groups: []string{"everyone", "acme-ops"}}
	carol = oidctest.Person{Username: "carol", Password: "carol-pw", Subject: "carol-1", Email: "carol@example.com",
		Groups: []string{"intake-staff"}}
	bob = oidctest.Person{Username: "bob", Password: "bob-pw", Subject: "bob-1", Email: "bob@example.com",
		Groups: []string{"everyone", "contractors"}}
	people = intake.PeopleMap{
		{Group: "intake-staff", Staff: true},
		{Group: "acme-ops", Org: "acme", Role: intake.RoleOperator},
		{Group: "globex-ops", Org: "globex", Role: intake.RoleOperator},
	}
)

// sessionCounter counts the sessions the console asks to record, so a
// refusal is seen to record none.
type sessionCounter struct {
	intake.Store
	sessions atomic.Int32
}

func (s *sessionCounter) CreateSession(ctx context.Context, cs intake.ConsoleSession, audit ...intake.AuditEntry) error {
	s.sessions.Add(1)
	return s.Store.CreateSession(ctx, cs, audit...)
}

// ssoEnv is a console with single sign-on at issuer, over a store with two
// orgs, acme and globex, each with a connection named after it.
type ssoEnv struct {
	t      *testing.T
	url    string
	store  *sessionCounter
	acme   intake.Org
	globex intake.Org
}

func newSSOEnv(t *testing.T, issuer string) *ssoEnv {
	t.Helper()
	ctx := context.Background()
	st := &sessionCounter{Store: testkit.SQLite(t)}
	sealer := testkit.Sealer(t)
	ctl := control.New(control.Config{Store: st, Sealer: sealer, StaffToken: staffToken, People: people})
	e := &ssoEnv{t: t, store: st}
	var err error
	for _, o := range []*intake.Org{&e.acme, &e.globex} {
		name := map[*intake.Org]string{&e.acme: "acme", &e.globex: "globex"}[o]
		if *o, _, err = ctl.CreateOrg(ctx, control.Caller{Actor: "staff"}, name); err != nil {
			t.Fatal(err)
		}
		if _, err := ctl.CreateConnection(ctx, control.Caller{Actor: "staff"}, control.NewConnection{OrgID: o.ID, Provider: "stripe",
			Name: name + " live", Secrets: []string{"whsec_x"}}); err != nil {
			t.Fatal(err)
		}
	}
	c := console.New(console.Config{Control: ctl, SingleSignOn: console.SingleSignOn{
		Issuer: issuer, ClientID: ssoClientID, ClientSecret: ssoClientSecret}})
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

func (e *ssoEnv) callback() string { return e.url + "/console/login/oidc/callback" }

// ssoBrowser is a client with its own cookies. It stops at the console's
// callback when stopAtCallback is set, so a test can change the answer.
func ssoBrowser(t *testing.T, stopAtCallback bool) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if stopAtCallback && r.URL.Path == "/console/login/oidc/callback" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

func get(t *testing.T, b *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// signInAtProvider starts single sign-on in b and signs in at the
// provider's form as p: it returns the provider's answer, which is the
// console's callback page (or, with stopAtCallback, the redirect to it).
func signInAtProvider(t *testing.T, b *http.Client, e *ssoEnv, p oidctest.Person) (*http.Response, string) {
	t.Helper()
	form, _ := get(t, b, e.url+"/console/login/oidc?next=/console/connections")
	id := form.Request.URL.Query().Get("authRequestID")
	if form.StatusCode != 200 || id == "" {
		t.Fatalf("the provider's sign-in form: %d at %s", form.StatusCode, form.Request.URL)
	}
	resp, err := b.PostForm(form.Request.URL.Scheme+"://"+form.Request.URL.Host+"/login/username",
		url.Values{"id": {id}, "username": {p.Username}, "password": {p.Password}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// sessionCookie is the console's session cookie b holds, if any.
func sessionCookie(b *http.Client, consoleURL string) string {
	u, _ := url.Parse(consoleURL + "/console/")
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == "intake_console" {
			return c.Value
		}
	}
	return ""
}

func TestSingleSignOnSignsAPersonInToTheirMappedOrgAndAuditsThem(t *testing.T) {
	idp := oidctest.Start(t, "127.0.0.1", alice, carol)
	e := newSSOEnv(t, idp.Issuer)
	idp.Register(ssoClientID, ssoClientSecret, e.callback())

	// The sign-in page offers single sign-on; it sends the browser to the
	// provider with PKCE S256, state, nonce and scope openid.
	_, page := get(t, ssoBrowser(t, false), e.url+"/console/login")
	if !strings.Contains(page, `href="/console/login/oidc?next=%2Fconsole%2F"`) || !strings.Contains(page, "Sign in with single sign-on") {
		t.Fatalf("the sign-in page offers no single sign-on:\n%s", page)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start, err := noFollow.Get(e.url + "/console/login/oidc")
	if err != nil {
		t.Fatal(err)
	}
	start.Body.Close()
	to, _ := url.Parse(start.Header.Get("Location"))
	q := to.Query()
	if start.StatusCode != http.StatusSeeOther || !strings.HasPrefix(to.String(), idp.Issuer) || q.Get("code_challenge_method") != "S256" ||
		len(q.Get("code_challenge")) < 43 || len(q.Get("state")) < 32 || len(q.Get("nonce")) < 32 ||
		!strings.Contains(" "+q.Get("scope")+" ", " openid ") || q.Get("redirect_uri") != e.callback() || q.Get("client_id") != ssoClientID {
		t.Fatalf("the console sends the browser to %d %s", start.StatusCode, to)
	}

	b := ssoBrowser(t, false)
	resp, body := signInAtProvider(t, b, e, alice)
	if resp.StatusCode != 200 || resp.Header.Get("Refresh") != "0; url=/console/connections" || !strings.Contains(body, "person:alice@example.com") {
		t.Fatalf("after the provider: %d %q\n%s", resp.StatusCode, resp.Header.Get("Refresh"), body)
	}
	_, conns := get(t, b, e.url+"/console/connections")
	if !strings.Contains(conns, "acme live") || strings.Contains(conns, "globex live") || strings.Contains(conns, "staff · all orgs") {
		t.Fatalf("alice's connections page shows another org's, or none of hers:\n%s", conns)
	}
	audit, err := e.store.ListAudit(context.Background(), intake.Scope{OrgID: e.acme.ID}, intake.AuditFilter{Limit: 10})
	if err != nil || len(audit.Items) == 0 || audit.Items[0].Action != "session.sign_in" || audit.Items[0].Actor != "person:alice@example.com" ||
		audit.Items[0].Detail != "sub=248289761001 email=alice@example.com role=operator" {
		t.Fatalf("acme's audit = %+v %v, want alice's sign-in naming her subject and email", audit.Items, err)
	}

	// Staff sees every org.
	b = ssoBrowser(t, false)
	if resp, body := signInAtProvider(t, b, e, carol); resp.StatusCode != 200 {
		t.Fatalf("carol: %d\n%s", resp.StatusCode, body)
	}
	if _, conns := get(t, b, e.url+"/console/connections"); !strings.Contains(conns, "acme live") || !strings.Contains(conns, "globex live") {
		t.Fatalf("staff's connections page:\n%s", conns)
	}
	if n := e.store.sessions.Load(); n != 2 {
		t.Fatalf("%d sessions recorded, want alice's and carol's", n)
	}
}

// An email the provider does not say it verified could be anyone's: the
// person is named by their subject, in the session and the audit, even
// when the address is another person's.
func TestSingleSignOnTrustsAnEmailOnlyWithEmailVerified(t *testing.T) {
	mallory := oidctest.Person{Username: "mallory", Password: "mallory-pw", Subject: "mallory-1", Email: "alice@example.com",
		EmailUnverified: true, Groups: []string{"acme-ops"}}
	idp := oidctest.Start(t, "127.0.0.1", mallory)
	e := newSSOEnv(t, idp.Issuer)
	idp.Register(ssoClientID, ssoClientSecret, e.callback())
	b := ssoBrowser(t, false)
	resp, body := signInAtProvider(t, b, e, mallory)
	if resp.StatusCode != 200 || strings.Contains(body, "alice@example.com") || !strings.Contains(body, "person:mallory-1") {
		t.Fatalf("after the provider: %d\n%s", resp.StatusCode, body)
	}
	audit, err := e.store.ListAudit(context.Background(), intake.Scope{OrgID: e.acme.ID}, intake.AuditFilter{Limit: 10})
	if err != nil || len(audit.Items) == 0 || audit.Items[0].Action != "session.sign_in" || audit.Items[0].Actor != "person:mallory-1" ||
		audit.Items[0].Detail != "sub=mallory-1 email= role=operator" {
		t.Fatalf("acme's audit = %+v %v, want the sign-in named by its subject alone", audit.Items, err)
	}

	// Each form the claim takes in an ID token.
	f := startForger(t)
	for verified, says := range map[any]string{true: "person:mallory@example.com", "true": "person:mallory@example.com",
		false: "person:mallory-1", "false": "person:mallory-1", nil: "person:mallory-1", "yes": "person:mallory-1"} {
		f.craft = func(c map[string]any) *rsa.PrivateKey {
			if c["email_verified"] = verified; verified == nil {
				delete(c, "email_verified")
			}
			return f.published
		}
		e := newSSOEnv(t, f.srv.URL)
		if resp, body := get(t, ssoBrowser(t, false), e.url+"/console/login/oidc"); resp.StatusCode != 200 || !strings.Contains(body, says) {
			t.Errorf("email_verified %#v: answered %d, want 200 saying %q:\n%s", verified, resp.StatusCode, says, body)
		}
	}
}

func TestSingleSignOnRefusesAPersonWhoseGroupsMapToNoOrg(t *testing.T) {
	idp := oidctest.Start(t, "127.0.0.1", bob)
	e := newSSOEnv(t, idp.Issuer)
	idp.Register(ssoClientID, ssoClientSecret, e.callback())
	b := ssoBrowser(t, false)
	resp, body := signInAtProvider(t, b, e, bob)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "bob@example.com may not sign in: none of their groups gives access to an org here") ||
		!strings.Contains(body, `id="sso"`) {
		t.Fatalf("bob: %d\n%s", resp.StatusCode, body)
	}
	if n := e.store.sessions.Load(); n != 0 || sessionCookie(b, e.url) != "" {
		t.Fatalf("a refused person got a session (%d recorded)", n)
	}
}

func TestSingleSignOnRefusesAnAnswerWhoseStateDoesNotMatch(t *testing.T) {
	idp := oidctest.Start(t, "127.0.0.1", alice)
	e := newSSOEnv(t, idp.Issuer)
	idp.Register(ssoClientID, ssoClientSecret, e.callback())
	b := ssoBrowser(t, true)
	resp, _ := signInAtProvider(t, b, e, alice)
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || back.Query().Get("code") == "" || back.Query().Get("state") == "" {
		t.Fatalf("the provider answered %d %s", resp.StatusCode, back)
	}
	q := back.Query()
	q.Set("state", q.Get("state")+"x")
	back.RawQuery = q.Encode()
	refused, body := get(t, b, back.String())
	if refused.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "its state does not match") {
		t.Fatalf("a changed state: %d\n%s", refused.StatusCode, body)
	}
	// The true answer in another browser, which did not start the sign-in,
	// is refused too.
	q.Set("state", strings.TrimSuffix(q.Get("state"), "x"))
	back.RawQuery = q.Encode()
	if other, body := get(t, ssoBrowser(t, false), back.String()); other.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(body, "started in another browser") {
		t.Fatalf("the answer in another browser: %d\n%s", other.StatusCode, body)
	}
	if n := e.store.sessions.Load(); n != 0 || sessionCookie(b, e.url) != "" {
		t.Fatalf("%d sessions recorded for refused answers", n)
	}
}

// forger is an identity provider whose token endpoint answers with an ID
// token the test crafts: for the tokens a real provider would never issue.
type forger struct {
	srv       *httptest.Server
	published *rsa.PrivateKey // in its JWKS
	unknown   *rsa.PrivateKey // in no JWKS
	craft     func(claims map[string]any) (key *rsa.PrivateKey)

	mu     sync.Mutex
	nonces map[string]string // by code
}

func startForger(t *testing.T) *forger {
	f := &forger{nonces: map[string]string{}}
	f.published, _ = rsa.GenerateKey(rand.Reader, 2048)
	f.unknown, _ = rsa.GenerateKey(rand.Reader, 2048)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": f.srv.URL, "authorization_endpoint": f.srv.URL + "/authorize",
			"token_endpoint": f.srv.URL + "/token", "jwks_uri": f.srv.URL + "/keys", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &f.published.PublicKey, KeyID: "published", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		code := rand.Text()
		f.mu.Lock()
		f.nonces[code] = q.Get("nonce")
		f.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		nonce, ok := f.nonces[r.PostFormValue("code")]
		f.mu.Unlock()
		if !ok || r.PostFormValue("code_verifier") == "" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		now := time.Now()
		claims := map[string]any{"iss": f.srv.URL, "aud": ssoClientID, "sub": "mallory-1", "email": "mallory@example.com",
			"email_verified": true, "groups": []string{"acme-ops"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "nonce": nonce}
		key := f.craft(claims)
		kid := "published"
		if key == f.unknown {
			kid = "unknown"
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
			(&jose.SignerOptions{}).WithType("JWT"))
		if err != nil {
			t.Error(err)
			return
		}
		payload, _ := json.Marshal(claims)
		jws, _ := signer.Sign(payload)
		idToken, _ := jws.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 3600, "id_token": idToken})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func TestSingleSignOnRefusesIDTokensItMustNotTrust(t *testing.T) {
	f := startForger(t)
	cases := []struct {
		name   string
		craft  func(c map[string]any) *rsa.PrivateKey
		status int
		says   string
	}{
		// The well-formed token is taken: each refusal below is for its one
		// defect.
		{"well formed", func(c map[string]any) *rsa.PrivateKey { return f.published }, http.StatusOK, "person:mallory@example.com"},
		{"from another issuer", func(c map[string]any) *rsa.PrivateKey {
			c["iss"] = "https://idp.example.com"
			return f.published
		}, http.StatusUnauthorized, "it was issued by another identity provider"},
		{"for another audience", func(c map[string]any) *rsa.PrivateKey {
			c["aud"] = "another-app"
			return f.published
		}, http.StatusUnauthorized, "it was issued for another application"},
		{"expired", func(c map[string]any) *rsa.PrivateKey {
			c["iat"], c["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
			return f.published
		}, http.StatusUnauthorized, "it has expired"},
		{"signed with an unknown key", func(c map[string]any) *rsa.PrivateKey { return f.unknown }, http.StatusUnauthorized,
			"its signature does not verify"},
		{"for another sign-in", func(c map[string]any) *rsa.PrivateKey {
			c["nonce"] = "another sign-in's nonce"
			return f.published
		}, http.StatusUnauthorized, "it was not issued for this sign-in (nonce)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.craft = tc.craft
			e := newSSOEnv(t, f.srv.URL)
			b := ssoBrowser(t, false)
			resp, body := get(t, b, e.url+"/console/login/oidc")
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.says) {
				t.Fatalf("answered %d, want %d saying %q:\n%s", resp.StatusCode, tc.status, tc.says, body)
			}
			want := int32(0)
			if tc.status == http.StatusOK {
				want = 1
			}
			if n := e.store.sessions.Load(); n != want || (sessionCookie(b, e.url) != "") != (want == 1) {
				t.Fatalf("%d sessions recorded, want %d", n, want)
			}
		})
	}
}

// Behind a proxy every person shares one address: the token form's ten
// tries a minute would lock a company out of single sign-on at nine.
func TestSingleSignOnIsNotHeldToTheTokenFormsLimitOnTries(t *testing.T) {
	idp := oidctest.Start(t, "127.0.0.1", alice)
	e := newSSOEnv(t, idp.Issuer)
	idp.Register(ssoClientID, ssoClientSecret, e.callback())
	for i := range 15 {
		if resp, body := signInAtProvider(t, ssoBrowser(t, false), e, alice); resp.StatusCode != http.StatusOK {
			t.Fatalf("sign-in %d: %d\n%s", i+1, resp.StatusCode, body)
		}
	}
}
