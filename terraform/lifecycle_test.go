package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// stack is a whole org in HCL: the connection's secret and the
// consumer's name are what the tests change.
func stack(secret, consumerName string) string {
	return fmt.Sprintf(`
resource "intake_org" "acme" {
  name      = "acme"
  retention = "720h"
}

resource "intake_connection" "gh" {
  org_id        = intake_org.acme.id
  provider_code = "github"
  name          = "github"
  secrets       = [%q]
}

resource "intake_endpoint" "in" {
  connection_id = intake_connection.gh.id
  name          = "main"
  rate_per_sec  = 50
}

resource "intake_consumer" "app" {
  org_id             = intake_org.acme.id
  name               = %q
  app                = "crm"
  url                = "http://127.0.0.1:9/hooks"
  event_types        = ["github.*"]
  paused             = true
  retry_attempts     = 4
  auto_disable_after = "48h"
}

resource "intake_notification" "ops" {
  org_id = intake_org.acme.id
  url    = "http://127.0.0.1:9/notify"
  topics = ["message.dead", "consumer.tripped"]
}

resource "intake_key" "deploy" {
  org_id = intake_org.acme.id
  role   = "viewer"
  name   = "deploy-bot"
}

data "intake_event_types" "all" {}

output "endpoint_url" {
  value     = intake_endpoint.in.url
  sensitive = true
}

output "signing_secret" {
  value     = intake_consumer.app.signing_secret
  sensitive = true
}

output "event_types" {
  value = data.intake_event_types.all.types
}
`, secret, consumerName)
}

// TestPlanApplyImportDriftDestroy takes an org through its life with the
// real tofu: a plan, an apply, a second plan with nothing to do, a change
// made outside OpenTofu seen as drift and undone, a change racing a saved
// plan refused by its ETag, a rotated secret never printed, an object
// deleted outside OpenTofu recreated, an import, and a destroy.
func TestPlanApplyImportDriftDestroy(t *testing.T) {
	h := newHarness(t)
	h.config(stack("first-secret", "crm"))

	out := h.must(2, "plan", "-detailed-exitcode")
	for _, want := range []string{"intake_org.acme will be created", "intake_connection.gh will be created",
		"intake_endpoint.in will be created", "intake_consumer.app will be created", "intake_notification.ops will be created",
		"intake_key.deploy will be created", "Plan: 6 to add, 0 to change, 0 to destroy"} {
		if !strings.Contains(out, want) {
			t.Errorf("the first plan does not say %q:\n%s", want, out)
		}
	}
	out = h.must(0, "apply", "-auto-approve")
	if strings.Contains(out, "first-secret") {
		t.Errorf("apply printed the connection's secret:\n%s", out)
	}

	// What tofu made is what intake has.
	st := h.state()
	orgID := h.attr(st, "intake_org.acme", "id")
	var org struct{ Name, Retention string }
	if code := h.api("GET", "/orgs/"+orgID, nil, &org); code != 200 || org.Name != "acme" {
		t.Fatalf("GET the org: %d %+v", code, org)
	}
	consumerID := h.attr(st, "intake_consumer.app", "id")
	var consumer struct {
		Name, App, URL   string
		Paused           bool
		RetryAttempts    int    `json:"retry_attempts"`
		AutoDisableAfter string `json:"auto_disable_after"`
	}
	if code := h.api("GET", "/consumers/"+consumerID, nil, &consumer); code != 200 || consumer.App != "crm" || !consumer.Paused || consumer.RetryAttempts != 4 {
		t.Fatalf("GET the consumer: %d %+v", code, consumer)
	}
	if secret := h.attr(st, "intake_consumer.app", "signing_secret"); secret == "" {
		t.Error("the consumer's signing secret is not in the state")
	}
	var notif struct{ URL string }
	if code := h.api("GET", "/orgs/"+orgID+"/notifications", nil, &notif); code != 200 || notif.URL != "http://127.0.0.1:9/notify" {
		t.Fatalf("GET the notifications: %d %+v", code, notif)
	}
	keyID := h.attr(st, "intake_key.deploy", "id")
	if key := h.attr(st, "intake_key.deploy", "key"); key == "" || !strings.HasPrefix(key, h.attr(st, "intake_key.deploy", "prefix")) {
		t.Errorf("the key %q does not begin with its prefix", key)
	}

	// The endpoint's URL is the one intake minted: the connection's
	// secret is checked on what arrives there.
	endpointID := h.attr(st, "intake_endpoint.in", "id")
	endpointURL := h.must(0, "output", "-raw", "endpoint_url")

	// Nothing changed: nothing to do.
	h.must(0, "plan", "-detailed-exitcode")

	if m := h.deliver(endpointURL, endpointID, "first-secret", "d1"); m.State != "processed" {
		t.Fatalf("a webhook signed with the configured secret: %+v", m)
	}

	// A change made outside OpenTofu is drift, and apply undoes it.
	if code := h.api("PATCH", "/consumers/"+consumerID, map[string]any{"name": "renamed-by-hand"}, nil); code != 200 {
		t.Fatalf("PATCH the consumer: %d", code)
	}
	out = h.must(2, "plan", "-detailed-exitcode")
	if !strings.Contains(out, `~ name               = "renamed-by-hand" -> "crm"`) || !strings.Contains(out, "1 to change") {
		t.Errorf("the plan does not undo the rename:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	if h.api("GET", "/consumers/"+consumerID, nil, &consumer); consumer.Name != "crm" {
		t.Errorf("after apply the consumer is named %q", consumer.Name)
	}
	// The catalog, read by the data source, has the type just received.
	if out := h.must(0, "output", "-json", "event_types"); strings.TrimSpace(out) != `["github.issues.opened"]` {
		t.Errorf("data.intake_event_types: %s", out)
	}

	// A saved plan is applied only over the version it was made from: a
	// change in between is refused by its ETag, never overwritten.
	h.config(stack("first-secret", "crm-v2"))
	h.must(2, "plan", "-detailed-exitcode", "-out=rename.plan")
	if code := h.api("PATCH", "/consumers/"+consumerID, map[string]any{"url": "http://127.0.0.1:9/moved"}, nil); code != 200 {
		t.Fatalf("PATCH the consumer: %d", code)
	}
	out = h.must(1, "apply", "rename.plan")
	if !strings.Contains(flat(out), "changed outside OpenTofu since it was read") {
		t.Errorf("applying a stale plan does not say the consumer changed:\n%s", out)
	}
	if h.api("GET", "/consumers/"+consumerID, nil, &consumer); consumer.Name != "crm" || consumer.URL != "http://127.0.0.1:9/moved" {
		t.Errorf("the stale plan was applied over the change: %+v", consumer)
	}
	h.must(0, "apply", "-auto-approve")
	if h.api("GET", "/consumers/"+consumerID, nil, &consumer); consumer.Name != "crm-v2" || consumer.URL != "http://127.0.0.1:9/hooks" {
		t.Errorf("after a fresh apply: %+v", consumer)
	}

	// A secret changed in HCL is rotated, and no plan prints it.
	h.config(stack("second-secret", "crm-v2"))
	out = h.must(2, "plan", "-detailed-exitcode")
	if strings.Contains(out, "second-secret") || strings.Contains(out, "first-secret") {
		t.Errorf("the plan prints a secret:\n%s", out)
	}
	if !strings.Contains(out, "~ secrets       = (sensitive value)") || !strings.Contains(out, "1 to change") {
		t.Errorf("the plan does not change the secrets in place:\n%s", out)
	}
	out = h.must(0, "apply", "-auto-approve")
	if strings.Contains(out, "second-secret") {
		t.Errorf("apply printed the secret:\n%s", out)
	}
	if m := h.deliver(endpointURL, endpointID, "second-secret", "d2"); m.State != "processed" {
		t.Errorf("a webhook signed with the new secret: %+v", m)
	}
	if m := h.deliver(endpointURL, endpointID, "first-secret", "d3"); m.State != "ignored" || m.Outcome != "signature" {
		t.Errorf("a webhook signed with the replaced secret: %+v", m)
	}

	// Deleted outside OpenTofu: the next plan makes it again.
	if code := h.api("DELETE", "/endpoints/"+endpointID, nil, nil); code/100 != 2 {
		t.Fatalf("DELETE the endpoint: %d", code)
	}
	out = h.must(2, "plan", "-detailed-exitcode")
	if !strings.Contains(out, "intake_endpoint.in will be created") || !strings.Contains(out, "1 to add, 0 to change, 0 to destroy") {
		t.Errorf("the plan does not recreate the deleted endpoint:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	newEndpoint := h.attr(h.state(), "intake_endpoint.in", "id")
	if newEndpoint == endpointID || h.api("GET", "/endpoints/"+newEndpoint, nil, nil) != 200 {
		t.Errorf("the endpoint was not made again: %s, was %s", newEndpoint, endpointID)
	}

	// Import by id: forgotten, imported, and nothing to do.
	for _, imp := range [][2]string{{"intake_consumer.app", consumerID}, {"intake_org.acme", orgID},
		{"intake_endpoint.in", newEndpoint}, {"intake_notification.ops", orgID}, {"intake_key.deploy", keyID}} {
		h.must(0, "state", "rm", imp[0])
		h.must(0, "import", imp[0], imp[1])
	}
	out = h.must(0, "plan", "-detailed-exitcode")
	if !strings.Contains(out, "No changes") {
		t.Errorf("the plan after importing is not empty:\n%s", out)
	}

	// Destroy: every object goes.
	h.must(0, "destroy", "-auto-approve")
	if code := h.api("GET", "/consumers/"+consumerID, nil, nil); code != 404 {
		t.Errorf("the consumer answers %d after destroy", code)
	}
	if code := h.api("GET", "/orgs/"+orgID, nil, nil); code != 404 {
		t.Errorf("the org answers %d after destroy", code)
	}
}

// TestUnknownProviderCodeIsRefusedAndNothingIsMade: an apply naming a
// provider intake does not know shows intake's 400 as an error, and
// leaves no connection behind, in intake or in the state.
func TestUnknownProviderCodeIsRefusedAndNothingIsMade(t *testing.T) {
	h := newHarness(t)
	var org struct{ ID string }
	if code := h.api("POST", "/orgs", map[string]string{"name": "acme"}, &org); code != 201 {
		t.Fatalf("POST /orgs: %d", code)
	}
	h.config(fmt.Sprintf(`
resource "intake_connection" "bad" {
  org_id        = %q
  provider_code = "no-such-provider"
  name          = "bad"
  secrets       = ["s"]
}
`, org.ID))
	out := h.must(1, "apply", "-auto-approve")
	if f := flat(out); !strings.Contains(f, "Error: Creating connection bad") ||
		!strings.Contains(f, `intake answered 400 invalid: unknown provider "no-such-provider"`) {
		t.Errorf("the apply does not show intake's refusal:\n%s", out)
	}
	var list struct{ Items []struct{ ID string } }
	if code := h.api("GET", "/connections", nil, &list); code != 200 || len(list.Items) != 0 {
		t.Errorf("connections after the refused apply: %d %+v", code, list.Items)
	}
	if out := h.must(0, "state", "list"); strings.TrimSpace(out) != "" {
		t.Errorf("the state holds something after the refused apply:\n%s", out)
	}
}

// orgHCL is an org for the tests below to put one object in.
const orgHCL = `
resource "intake_org" "acme" { name = "acme" }
`

// A connection's config changed in HCL is sent to intake; one changed
// outside OpenTofu shows as a change back; one taken out of HCL is
// cleared.
func TestAConnectionsConfigFollowsTheHCL(t *testing.T) {
	h := newHarness(t)
	conn := func(config string) string {
		return orgHCL + fmt.Sprintf(`
resource "intake_connection" "stripe" {
  org_id        = intake_org.acme.id
  provider_code = "stripe"
  name          = "stripe"
  secrets       = ["whsec_1"]
  %s
}
`, config)
	}
	tolerance := func(id string) string {
		h.t.Helper()
		var c struct{ Config map[string]any }
		if code := h.api("GET", "/connections/"+id, nil, &c); code != 200 {
			h.t.Fatalf("GET the connection: %d", code)
		}
		v, _ := c.Config["tolerance"].(string)
		return v
	}
	h.config(conn(`config = jsonencode({ tolerance = "5m" })`))
	h.must(0, "apply", "-auto-approve")
	id := h.attr(h.state(), "intake_connection.stripe", "id")
	if got := tolerance(id); got != "5m" {
		t.Fatalf("the connection's tolerance after apply: %q, want 5m", got)
	}
	h.must(0, "plan", "-detailed-exitcode")

	h.config(conn(`config = jsonencode({ tolerance = "10m" })`))
	out := h.must(2, "plan", "-detailed-exitcode")
	if !strings.Contains(out, `~ config`) || !strings.Contains(out, "0 to add, 1 to change, 0 to destroy") {
		t.Errorf("the plan does not change the config in place:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	if got := tolerance(id); got != "10m" {
		t.Fatalf("the connection's tolerance after the change: %q, want 10m", got)
	}
	h.must(0, "plan", "-detailed-exitcode")

	if code := h.api("PATCH", "/connections/"+id, map[string]any{"config": map[string]any{"tolerance": "1m"}}, nil); code != 200 {
		t.Fatalf("PATCH the connection: %d", code)
	}
	out = h.must(2, "plan", "-detailed-exitcode")
	if !strings.Contains(out, `~ config`) || !strings.Contains(out, "1m") || !strings.Contains(out, "10m") {
		t.Errorf("the plan does not put back the config changed outside OpenTofu:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	if got := tolerance(id); got != "10m" {
		t.Fatalf("the connection's tolerance after undoing the change: %q, want 10m", got)
	}

	h.config(conn(""))
	out = h.must(2, "plan", "-detailed-exitcode")
	if !strings.Contains(out, `- config`) {
		t.Errorf("the plan does not clear the config taken out of HCL:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	if got := tolerance(id); got != "" {
		t.Fatalf("the connection's tolerance after it was taken out of HCL: %q, want none", got)
	}
	h.must(0, "plan", "-detailed-exitcode")
}

// An imported connection's secrets are null, since intake never shows
// them: the next plan puts the configured ones back in place (README),
// replacing any set outside OpenTofu, and prints none.
func TestAnImportedConnectionsSecretsAreNullAndTheNextPlanPutsThemBack(t *testing.T) {
	h := newHarness(t)
	h.config(orgHCL + `
resource "intake_connection" "gh" {
  org_id        = intake_org.acme.id
  provider_code = "github"
  name          = "github"
  secrets       = ["configured-secret"]
}

resource "intake_endpoint" "in" {
  connection_id = intake_connection.gh.id
}

output "endpoint_url" {
  value     = intake_endpoint.in.url
  sensitive = true
}
`)
	h.must(0, "apply", "-auto-approve")
	st := h.state()
	connID, endpointID := h.attr(st, "intake_connection.gh", "id"), h.attr(st, "intake_endpoint.in", "id")
	endpointURL := h.must(0, "output", "-raw", "endpoint_url")
	if code := h.api("PUT", "/connections/"+connID+"/secrets", map[string]any{"secrets": []string{"outside-secret"}}, nil); code != 200 {
		t.Fatalf("PUT the connection's secrets: %d", code)
	}

	h.must(0, "state", "rm", "intake_connection.gh")
	h.must(0, "import", "intake_connection.gh", connID)
	if r := h.state()["intake_connection.gh"]; r == nil || r["secrets"] != nil {
		t.Fatalf("the imported connection's secrets in the state: %v, want null", r)
	}
	out := h.must(2, "plan", "-detailed-exitcode")
	if strings.Contains(out, "configured-secret") || strings.Contains(out, "outside-secret") {
		t.Errorf("the plan prints a secret:\n%s", out)
	}
	if !strings.Contains(out, "secrets       = (sensitive value)") || !strings.Contains(out, "0 to add, 1 to change, 0 to destroy") {
		t.Errorf("the plan does not put the configured secrets back in place:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	h.must(0, "plan", "-detailed-exitcode")
	if m := h.deliver(endpointURL, endpointID, "configured-secret", "d1"); m.State != "processed" {
		t.Errorf("a webhook signed with the configured secret: %+v", m)
	}
	if m := h.deliver(endpointURL, endpointID, "outside-secret", "d2"); m.State != "ignored" || m.Outcome != "signature" {
		t.Errorf("a webhook signed with the secret set outside OpenTofu: %+v", m)
	}
}

// An endpoint's name taken out of HCL is cleared in intake, and the
// next plan has nothing to do.
func TestAnEndpointsNameTakenOutOfTheHCLIsCleared(t *testing.T) {
	h := newHarness(t)
	endpoint := func(name string) string {
		return orgHCL + fmt.Sprintf(`
resource "intake_connection" "gh" {
  org_id        = intake_org.acme.id
  provider_code = "github"
  name          = "github"
  secrets       = ["s"]
}

resource "intake_endpoint" "in" {
  connection_id = intake_connection.gh.id
  %s
}
`, name)
	}
	name := func(id string) string {
		h.t.Helper()
		var e struct{ Name string }
		if code := h.api("GET", "/endpoints/"+id, nil, &e); code != 200 {
			h.t.Fatalf("GET the endpoint: %d", code)
		}
		return e.Name
	}
	h.config(endpoint(`name = "main"`))
	h.must(0, "apply", "-auto-approve")
	id := h.attr(h.state(), "intake_endpoint.in", "id")
	if got := name(id); got != "main" {
		t.Fatalf("the endpoint is named %q, want main", got)
	}
	h.config(endpoint(""))
	out := h.must(2, "plan", "-detailed-exitcode")
	if !strings.Contains(out, `- name`) || !strings.Contains(out, "0 to add, 1 to change, 0 to destroy") {
		t.Errorf("the plan does not clear the name in place:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	if got := name(id); got != "" {
		t.Errorf("after apply the endpoint is named %q, want no name", got)
	}
	h.must(0, "plan", "-detailed-exitcode")
}

// A consumer URL with a credential in it is shown by intake with ***: the
// state keeps the configured URL, so the next plan has nothing to do, and
// a new credential in HCL is sent.
func TestAConsumerURLReadBackRedactedKeepsTheConfiguredOne(t *testing.T) {
	h := newHarness(t)
	consumer := func(token string) string {
		return orgHCL + fmt.Sprintf(`
resource "intake_consumer" "app" {
  org_id      = intake_org.acme.id
  name        = "crm"
  app         = "crm"
  url         = "http://127.0.0.1:9/hooks?token=%s"
  event_types = ["github.*"]
  paused      = true
}
`, token)
	}
	h.config(consumer("tok-first"))
	h.must(0, "apply", "-auto-approve")
	st := h.state()
	id := h.attr(st, "intake_consumer.app", "id")
	var c struct{ URL string }
	if code := h.api("GET", "/consumers/"+id, nil, &c); code != 200 || c.URL != "http://127.0.0.1:9/hooks?token=***" {
		t.Fatalf("GET the consumer: %d, url %q, want the token shown as ***", code, c.URL)
	}
	if got := h.attr(st, "intake_consumer.app", "url"); got != "http://127.0.0.1:9/hooks?token=tok-first" {
		t.Errorf("the state's url is %q, want the configured one", got)
	}
	if out := h.must(0, "plan", "-detailed-exitcode"); strings.Contains(out, "***") {
		t.Errorf("the plan shows intake's redacted url:\n%s", out)
	}

	h.config(consumer("tok-second"))
	out := h.must(2, "plan", "-detailed-exitcode")
	if !strings.Contains(out, "0 to add, 1 to change, 0 to destroy") {
		t.Errorf("the plan does not change the url in place:\n%s", out)
	}
	h.must(0, "apply", "-auto-approve")
	if got := h.attr(h.state(), "intake_consumer.app", "url"); got != "http://127.0.0.1:9/hooks?token=tok-second" {
		t.Errorf("after apply the state's url is %q, want the new one", got)
	}
	h.must(0, "plan", "-detailed-exitcode")
}

// message is a message as the API lists it, newest first.
type message struct {
	State, Outcome string
}

// messages lists the endpoint's messages, newest first.
func (h *harness) messages(endpointID string) []message {
	h.t.Helper()
	var list struct{ Items []message }
	if code := h.api("GET", "/messages?endpoint_id="+url.QueryEscape(endpointID), nil, &list); code != 200 {
		h.t.Fatalf("GET /messages: %d", code)
	}
	return list.Items
}

// deliver posts a GitHub webhook signed with secret to the endpoint's URL
// and returns its message once intake has settled it (processed, ignored
// or dead), polling the API: testkit.WaitFor is internal to the main
// module. A message whose signature fails has no provider event id, so
// it is found as the newest.
func (h *harness) deliver(endpointURL, endpointID, secret, delivery string) message {
	h.t.Helper()
	u, err := url.Parse(endpointURL)
	if err != nil || u.Path == "" {
		h.t.Fatalf("the endpoint's URL %q: %v", endpointURL, err)
	}
	before := len(h.messages(endpointID))
	body := fmt.Appendf(nil, `{"action":"opened","issue":{"node_id":"I_1"},"repository":{"node_id":"R_1"},"delivery":%q}`, delivery)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequest("POST", h.url+u.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		h.t.Fatalf("POST to the endpoint's URL answered %d", resp.StatusCode)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms := h.messages(endpointID)
		if len(ms) > before && (ms[0].State == "processed" || ms[0].State == "ignored" || ms[0].State == "dead") {
			return ms[0]
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("message %s not settled in 30s: %+v", delivery, ms)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadmeExampleValidates: the README's HCL is a configuration tofu
// accepts, with this provider's schema.
func TestReadmeExampleValidates(t *testing.T) {
	h := newHarness(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Managing intake with OpenTofu or Terraform")
	section, _, _ = strings.Cut(section, "\n## ")
	var example string
	for _, m := range regexp.MustCompile("(?s)```hcl\n(.*?)```").FindAllStringSubmatch(section, -1) {
		if strings.Contains(m[1], "required_providers") {
			example = m[1]
		}
	}
	if example == "" {
		t.Fatal("the README's OpenTofu section has no configuration")
	}
	writeFile(t, filepath.Join(h.work, "main.tf"), example)
	h.must(0, "validate")
}

// flat is tofu's output with its diagnostics' frames and line wrapping
// taken out, to find a message in.
func flat(out string) string {
	return strings.Join(strings.Fields(strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(out)), " ")
}
