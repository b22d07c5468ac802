package console_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/rules"
)

// An Okta connection whose hook authenticates with a header of the
// operator's naming: that header carries the shared secret as it is, and
// no word of redact's list matches its name.
func TestAConnectionsNamedCredentialHeaderIsHiddenFromTheAPITheConsoleAndRules(t *testing.T) {
	const secret = "okta-shared-value-0123456789"
	e := newEnv(t)
	var tn tenant
	tn.org = apiCall[api.Org](e, staffToken, "POST", "/api/v1/orgs", api.CreateOrgRequest{Name: "acme"})
	tn.conn = apiCall[api.Connection](e, tn.org.APIKey, "POST", "/api/v1/connections", api.CreateConnectionRequest{
		Provider: "okta", Name: "okta", Secrets: []string{secret}, Config: json.RawMessage(`{"auth_header": "X-Hook-Key"}`)})
	tn.ep = apiCall[api.Endpoint](e, tn.org.APIKey, "POST", "/api/v1/endpoints", api.CreateEndpointRequest{ConnectionID: tn.conn.ID})
	// The connection's filter keeps the event only if it sees the other
	// headers and not the credential one.
	filter := `headers["x-request-id"] == "r-1" && !("x-hook-key" in headers)`
	apiCall[api.Connection](e, tn.org.APIKey, "PATCH", "/api/v1/connections/"+tn.conn.ID, api.UpdateConnectionRequest{Filter: &filter})

	m := e.post(tn, http.Header{"Content-Type": {"application/json"}, "X-Hook-Key": {secret}, "X-Request-Id": {"r-1"}},
		[]byte(`{"eventId":"d-1","data":{"events":[{"uuid":"u-1","eventType":"user.session.start","published":"2026-11-30T12:00:00Z"}]}}`))
	if m.State != intake.MessageProcessed || m.Outcome != intake.OutcomeEvents || len(m.EventIDs) != 1 {
		t.Fatalf("message %s, outcome %s, %d events: the connection filter saw the credential header (or not the others)",
			m.State, m.Outcome, len(m.EventIDs))
	}

	view := raw(t, e, tn.org.APIKey, "GET", "/api/v1/messages/"+m.ID, nil)
	if strings.Contains(view, secret) || !strings.Contains(view, "r-1") {
		t.Fatalf("the API's message view shows the credential, or not the other headers: %s", view)
	}

	b := e.browser()
	b.signIn(tn.org.APIKey)
	p := b.get("/console/messages/" + m.ID)
	wantStatus(t, p, 200)
	if strings.Contains(p.body, secret) || !strings.Contains(p.body, "X-Request-Id") || !strings.Contains(p.body, "1 with credentials hidden") {
		t.Fatal("the console's message page shows the credential header, or not the others")
	}

	// What an interpret script and a filter are given, tried on the stored
	// message and its event.
	tried := raw(t, e, tn.org.APIKey, "POST", "/api/v1/rules/test", api.RuleTestRequest{Kind: rules.KindInterpret, MessageID: m.ID,
		Source: `function interpret(request) { return [{type: "seen", data: request.headers}] }`})
	if strings.Contains(tried, secret) || !strings.Contains(tried, "r-1") {
		t.Fatalf("an interpret script saw the credential header, or not the others: %s", tried)
	}
	tried = raw(t, e, tn.org.APIKey, "POST", "/api/v1/rules/test", api.RuleTestRequest{Kind: rules.KindFilter, EventID: m.EventIDs[0],
		Source: `"x-hook-key" in headers || !("x-request-id" in headers)`})
	if !strings.Contains(tried, `"result":false`) {
		t.Fatalf("a filter saw the credential header, or not the others: %s", tried)
	}
}

// A message stored while the connection named X-Hook-Key holds it: once
// the connection's auth_header is renamed, that header stays hidden.
func TestAConnectionsCredentialHeaderStaysHiddenAfterItIsRenamed(t *testing.T) {
	const secret = "okta-shared-value-0123456789"
	e := newEnv(t)
	var tn tenant
	tn.org = apiCall[api.Org](e, staffToken, "POST", "/api/v1/orgs", api.CreateOrgRequest{Name: "acme"})
	tn.conn = apiCall[api.Connection](e, tn.org.APIKey, "POST", "/api/v1/connections", api.CreateConnectionRequest{
		Provider: "okta", Name: "okta", Secrets: []string{secret}, Config: json.RawMessage(`{"auth_header": "X-Hook-Key"}`)})
	tn.ep = apiCall[api.Endpoint](e, tn.org.APIKey, "POST", "/api/v1/endpoints", api.CreateEndpointRequest{ConnectionID: tn.conn.ID})
	m := e.post(tn, http.Header{"Content-Type": {"application/json"}, "X-Hook-Key": {secret}, "X-Request-Id": {"r-1"}},
		[]byte(`{"eventId":"d-1","data":{"events":[{"uuid":"u-1","eventType":"user.session.start","published":"2026-11-30T12:00:00Z"}]}}`))
	if m.State != intake.MessageProcessed {
		t.Fatalf("message %s", m.State)
	}
	for _, name := range []string{"X-Okta-Key", "X-Third-Key"} {
		config := json.RawMessage(`{"auth_header": "` + name + `"}`)
		apiCall[api.Connection](e, tn.org.APIKey, "PATCH", "/api/v1/connections/"+tn.conn.ID, api.UpdateConnectionRequest{Config: config})
		if view := raw(t, e, tn.org.APIKey, "GET", "/api/v1/messages/"+m.ID, nil); strings.Contains(view, secret) || !strings.Contains(view, "r-1") {
			t.Fatalf("auth_header renamed to %s: the message view shows the old credential header, or not the others: %s", name, view)
		}
		tried := raw(t, e, tn.org.APIKey, "POST", "/api/v1/rules/test", api.RuleTestRequest{Kind: rules.KindInterpret, MessageID: m.ID,
			Source: `function interpret(request) { return [{type: "seen", data: request.headers}] }`})
		if strings.Contains(tried, secret) {
			t.Fatalf("auth_header renamed to %s: an interpret script saw the old credential header: %s", name, tried)
		}
	}
	b := e.browser()
	b.signIn(tn.org.APIKey)
	if p := b.get("/console/messages/" + m.ID); strings.Contains(p.body, secret) {
		t.Fatal("the console's message page shows the old credential header")
	}
}

// raw calls the admin API and returns its answer's body.
func raw(t *testing.T, e *env, tok, method, path string, in any) string {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, body)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return string(out)
}
