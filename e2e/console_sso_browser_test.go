package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/intakehq/intake/internal/oidctest"
)

// A person signs in to the console at an OpenID provider and sees their own
// org's traffic and nothing of another's; the audit names them. The
// provider runs at "localhost" and intake at 127.0.0.1, so the browser
// comes back from another site, as it does from a real provider.
func TestConsoleInBrowserSignsAPersonInAtTheIdentityProviderAndShowsOnlyTheirOrg(t *testing.T) {
	alice := oidctest.Person{Username: "alice", Password: "correct horse", Subject: "alice-248289761001", Email: "alice@example.com",
		Groups: []string{"everyone", "acme-ops"}}
	idp := oidctest.Start(t, "localhost", alice)
	s := launch(t, []string{"INTAKE_OIDC_CLIENT_SECRET=e2e-client-secret"},
		t.TempDir(), "--oidc-issuer", idp.Issuer, "--oidc-client-id", "intake-console", "--oidc-map", "acme-ops=acme:operator",
		"--oidc-map", "globex-ops=globex:admin")
	s.waitServing(t)
	idp.Register("intake-console", "e2e-client-secret", s.url+"/console/login/oidc/callback")

	acme, globex := setupStripeOrg(t, s, "acme"), setupStripeOrg(t, s, "globex")
	postStripe(t, s, acme, "invoice.paid")
	var msgs []message
	eventually(t, 30*time.Second, "acme's message settles", func() bool {
		msgs = s.settledMessages(t)
		return len(msgs) == 1
	})
	acmeMessage := msgs[0].ID
	postStripe(t, s, globex, "customer.created")
	eventually(t, 30*time.Second, "globex's message settles", func() bool { return len(s.settledMessages(t)) == 2 })

	tab := browserTab(t)
	step(t, tab, "open the console",
		chromedp.Navigate(s.url+"/console/messages"),
		chromedp.WaitVisible(chromedp.ID("sso")),
	)
	if label := read(t, tab, "button", chromedp.Text(chromedp.ID("sso"))); label != "Sign in with single sign-on" {
		t.Fatalf("the single sign-on button reads %q", label)
	}
	step(t, tab, "sign in at the provider",
		chromedp.Click(chromedp.ID("sso")),
		chromedp.WaitVisible(chromedp.ID("username")),
	)
	if loc := read(t, tab, "location", chromedp.Location()); !strings.HasPrefix(loc, idp.Issuer) {
		t.Fatalf("single sign-on went to %s, not the provider %s", loc, idp.Issuer)
	}
	step(t, tab, "the provider's form",
		chromedp.SendKeys(chromedp.ID("username"), alice.Username),
		chromedp.SendKeys(chromedp.ID("password"), alice.Password),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.CSS("header.top")),
	)
	if loc := read(t, tab, "location", chromedp.Location()); loc != s.url+"/console/messages" {
		t.Fatalf("after sign-in the browser is at %s, want the page it asked for", loc)
	}
	// The org, and the role alice's group gives her there.
	if badge := read(t, tab, "badge", chromedp.Text(chromedp.CSS("header.top .badge"))); badge != "acme · operator" {
		t.Fatalf("the console shows %q as the org and role", badge)
	}
	if rows := rowsOf(t, tab, "messages"); len(rows) != 1 || rows[0] != acmeMessage {
		t.Fatalf("alice sees messages %v, want acme's %s alone", rows, acmeMessage)
	}
	step(t, tab, "connections", chromedp.Navigate(s.url+"/console/connections"), chromedp.WaitVisible(chromedp.CSS("header.top")))
	html := read(t, tab, "page", chromedp.OuterHTML(chromedp.CSS("main")))
	if !strings.Contains(html, "acme live") || strings.Contains(html, "globex") {
		t.Fatal("alice's connections page is not acme's alone")
	}

	var audit struct {
		Items []struct {
			Actor, Action, Detail string
			OrgID                 string `json:"org_id"`
			TargetID              string `json:"target_id"`
		}
	}
	s.api(t, "GET", "/api/v1/audit?limit=100", nil, &audit)
	signedIn := false
	for _, a := range audit.Items {
		if a.Action == "session.sign_in" {
			signedIn = a.OrgID == acme.id && a.Actor == "person:alice@example.com" && a.TargetID == alice.Subject &&
				a.Detail == "sub=alice-248289761001 email=alice@example.com role=operator"
		}
	}
	if !signedIn {
		t.Fatalf("the audit does not name alice's sign-in: %+v", audit.Items)
	}

	step(t, tab, "sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sso")))
	step(t, tab, "a page needs a session again", chromedp.Navigate(s.url+"/console/messages"), chromedp.WaitVisible(chromedp.ID("sso")))
}
