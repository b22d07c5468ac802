package main

import (
	"os"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

func TestSingleSignOnFlagsMakeTheConsolesClientAndThePeopleMap(t *testing.T) {
	unsetOIDCEnv(t)
	t.Setenv("INTAKE_OIDC_CLIENT_SECRET", "from-the-environment")
	t.Setenv("INTAKE_OIDC_MAP", "intake-staff=staff,acme-ops=acme:operator")
	c := serveFlags(t, "--oidc-issuer", "https://idp.example.com/realms/main", "--oidc-client-id", "intake",
		"--oidc-scope", "email", "--oidc-scope", "groups", "--public-url", "https://intake.example.com/")
	sso, people, err := c.singleSignOn()
	if err != nil {
		t.Fatal(err)
	}
	if sso.Issuer != "https://idp.example.com/realms/main" || sso.ClientID != "intake" || sso.ClientSecret != "from-the-environment" ||
		sso.Claim != "groups" || strings.Join(sso.Scopes, " ") != "email groups" ||
		sso.RedirectURL != "https://intake.example.com/console/login/oidc/callback" {
		t.Fatalf("single sign-on = %+v", sso)
	}
	if len(people) != 2 || !people[0].Staff || people[1].Org != "acme" || people[1].Role != intake.RoleOperator {
		t.Fatalf("people map = %+v", people)
	}

	// Without --public-url the callback is under the address the browser used.
	c = serveFlags(t, "--oidc-issuer", "http://127.0.0.1:5556/dex", "--oidc-client-id", "intake")
	if sso, _, err := c.singleSignOn(); err != nil || sso.RedirectURL != "" || strings.Join(sso.Scopes, " ") != "email" {
		t.Fatalf("without a public URL: %+v %v", sso, err)
	}
	// No issuer: no single sign-on.
	t.Setenv("INTAKE_OIDC_MAP", "")
	t.Setenv("INTAKE_OIDC_CLIENT_SECRET", "")
	if sso, people, err := serveFlags(t).singleSignOn(); err != nil || sso.Issuer != "" || people != nil {
		t.Fatalf("no flags: %+v %+v %v", sso, people, err)
	}
}

func TestSingleSignOnFlagsRefuseAHalfMadeSetupAtStart(t *testing.T) {
	unsetOIDCEnv(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--oidc-issuer", "https://idp.example.com", "--oidc-map", "g=acme"}, "--oidc-client-id is required"},
		{[]string{"--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "intake"}, "--oidc-map is required"},
		{[]string{"--oidc-issuer", "idp.example.com", "--oidc-client-id", "intake", "--oidc-map", "g=acme"}, "want the issuer's http(s) URL"},
		{[]string{"--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "intake", "--oidc-map", "g=acme:owner"}, "must be viewer, operator or admin"},
		{[]string{"--oidc-client-id", "intake", "--oidc-map", "g=acme"}, "need --oidc-issuer"},
	} {
		_, _, err := serveFlags(t, tc.args...).singleSignOn()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want an error saying %q", tc.args, err, tc.says)
		}
	}
}

// unsetOIDCEnv clears the --oidc-… environment for the test.
func unsetOIDCEnv(t *testing.T) {
	for _, k := range []string{"ISSUER", "CLIENT_ID", "CLIENT_SECRET", "CLAIM", "MAP", "SCOPE"} {
		t.Setenv("INTAKE_OIDC_"+k, "")
		os.Unsetenv("INTAKE_OIDC_" + k)
	}
}
