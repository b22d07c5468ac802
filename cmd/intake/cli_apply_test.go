package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
)

const applyFile = `orgs:
  - name: acme
    connections:
      - name: github
        provider: github
        secrets: ["${env:ACME_GITHUB_SECRET}", "${file:old-secret.txt}"]
        filter: event.type != "github.ping"
        endpoints:
          - name: primary
            rate_per_sec: 20
            burst: 40
    consumers:
      - name: billing
        app: billing
        url: http://127.0.0.1:9000/hooks
        event_types: [github.*]
        transform: |
          function transform(event, context) {
            return {body: event.data};
          }
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApplyResolvesSecretsLocallyPrintsThePlanAndExportWritesPlaceholders(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	dir := t.TempDir()
	file := writeFile(t, dir, "intake.yaml", applyFile)
	writeFile(t, dir, "old-secret.txt", "gh-old-secret\n")
	t.Setenv("ACME_GITHUB_SECRET", "gh-new-secret")

	dry := s.mustRun(t, org.APIKey, "apply", "-f", file, "--dry-run")
	for _, want := range []string{"= unchanged org        acme", "+ create    connection acme/github", "+ create    endpoint   acme/github/primary",
		"+ create    consumer   acme/billing", "3 to create, 0 to update, 0 to delete, 1 unchanged: planned (dry run: nothing written)."} {
		if !strings.Contains(dry, want) {
			t.Fatalf("dry run lacks %q:\n%s", want, dry)
		}
	}
	out := s.mustRun(t, org.APIKey, "apply", "-f", file)
	if !strings.Contains(out, "Shown once") || !strings.Contains(out, "/webhooks/") || !strings.Contains(out, "signing secret: whsec_") {
		t.Fatalf("apply does not show what was minted:\n%s", out)
	}
	if strings.Contains(out, "gh-new-secret") || strings.Contains(out, "gh-old-secret") {
		t.Fatalf("apply printed a connection secret:\n%s", out)
	}
	again := s.mustRun(t, org.APIKey, "apply", "-f", file, "--prune")
	if !strings.HasPrefix(again, "No changes: the server already holds what intake.yaml declares (4 unchanged).") {
		t.Fatalf("second apply:\n%s", again)
	}

	exported := s.mustRun(t, org.APIKey, "export")
	for _, want := range []string{"# " + secretsComment, "- ${env:ACME_GITHUB_SECRET}", "- ${env:ACME_GITHUB_SECRET_2}", "transform: |"} {
		if !strings.Contains(exported, want) {
			t.Fatalf("export lacks %q:\n%s", want, exported)
		}
	}
	if strings.Contains(exported, "gh-new-secret") || strings.Contains(exported, "gh-old-secret") {
		t.Fatalf("export wrote a secret:\n%s", exported)
	}
	// The export, its second placeholder filled in, applies as a no-op.
	t.Setenv("ACME_GITHUB_SECRET_2", "gh-old-secret")
	back := writeFile(t, dir, "exported.yaml", exported)
	if out := s.mustRun(t, org.APIKey, "apply", "-f", back, "--prune"); !strings.HasPrefix(out, "No changes") {
		t.Fatalf("applying the export:\n%s", out)
	}
}

func TestApplyNamesWhatIsWrongWithTheFileAndSendsNothing(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	dir := t.TempDir()
	t.Setenv("ACME_GITHUB_SECRET", "")
	cases := []struct{ name, content, want string }{
		{"unset variable", applyFile, "environment variable ACME_GITHUB_SECRET is not set"},
		{"unreadable file", strings.Replace(applyFile, "${env:ACME_GITHUB_SECRET}", "${file:missing.txt}", 1), "cannot read secret file " + filepath.Join(dir, "missing.txt")},
		{"unknown placeholder", strings.Replace(applyFile, "${env:ACME_GITHUB_SECRET}", "${vault:x}", 1), "${env:NAME} or ${file:PATH}"},
		{"unknown field", strings.Replace(applyFile, "    consumers:", "    colour: red\n    consumers:", 1), "field colour not found"},
		{"empty file", "", "is empty"},
	}
	writeFile(t, dir, "old-secret.txt", "gh-old-secret")
	for _, tc := range cases {
		file := writeFile(t, dir, "intake.yaml", tc.content)
		_, err := s.run(t, org.APIKey, "apply", "-f", file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "gh-old-secret") {
			t.Errorf("%s: the error shows a secret", tc.name)
		}
	}
	if audit := s.mustRun(t, staffToken, "audit", "list"); !strings.Contains(audit, "org.create") || strings.Contains(audit, "connection.create") {
		t.Fatalf("a refused file created something:\n%s", audit)
	}
}

func TestApplyLabelsTheNotificationSecretAsTheOrgsNotConsumers(t *testing.T) {
	plan := control.Plan{Changes: []control.Change{
		{Action: control.ActionCreate, Kind: "notifications", Org: "acme", Name: "acme", SigningSecret: "whsec_notify"},
		{Action: control.ActionCreate, Kind: "consumer", Org: "acme", Name: "billing", SigningSecret: "whsec_billing"},
	}}
	var out strings.Builder
	if err := printPlan(&out, plan, "intake.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"notifications of org acme signing secret (receivers verify notices with it): whsec_notify",
		"consumer acme/billing signing secret: whsec_billing"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("plan lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "consumer acme/acme") {
		t.Fatalf("the notification secret is labelled a consumer's:\n%s", out.String())
	}
}
