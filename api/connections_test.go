package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestConnectionSecretsNeverLeaveTheServerNorSitInTheDatabaseInPlaintext(t *testing.T) {
	e := newEnv(t)
	org := must[api.Org](e, 201, "POST", "/api/v1/orgs", staffToken, api.CreateOrgRequest{Name: "acme"})
	secrets := []string{"whsec_first_plaintext_secret", "whsec_second_plaintext_secret"}
	var answers []string
	rec := e.do("POST", "/api/v1/connections", staffToken, api.CreateConnectionRequest{
		OrgID: org.ID, Provider: testProvider, Name: "stripe live", Secrets: secrets, Config: json.RawMessage(`{"tolerance": "5m"}`),
	})
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	answers = append(answers, rec.Body.String())
	var c api.Connection
	json.Unmarshal(rec.Body.Bytes(), &c)
	if c.SecretCount == nil || *c.SecretCount != 2 || c.OrgID != org.ID || c.Provider != testProvider || string(c.Config) != `{"tolerance":"5m"}` {
		t.Fatalf("created connection: %+v", c)
	}
	for _, tok := range []string{staffToken, org.APIKey} {
		answers = append(answers,
			e.do("GET", "/api/v1/connections/"+c.ID, tok, nil).Body.String(),
			e.do("GET", "/api/v1/connections", tok, nil).Body.String())
	}
	for _, a := range answers {
		for _, s := range secrets {
			if contains(a, s) {
				t.Fatalf("an answer shows a secret: %s", a)
			}
		}
	}
	db := string(e.dbBytes())
	for _, s := range secrets {
		if contains(db, s) {
			t.Fatalf("secret %q is stored in plaintext", s)
		}
	}

	// What is stored opens to the secrets, bound to this connection's id.
	stored, err := e.store.Connection(context.Background(), intake.Scope{}, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := e.sealer.OpenSecrets(stored.SealedSecrets, []byte(c.ID))
	if err != nil || len(opened) != 2 || string(opened[0]) != secrets[0] || string(opened[1]) != secrets[1] {
		t.Fatalf("stored secrets open to %q, %v", opened, err)
	}
	if _, err := e.sealer.OpenSecrets(stored.SealedSecrets, []byte(intake.NewID())); err == nil {
		t.Fatal("sealed secrets open under another connection's id")
	}
}

func TestNoneProviderTakesNoSecretsAndOthersNeedOne(t *testing.T) {
	e := newEnv(t)
	org := must[api.Org](e, 201, "POST", "/api/v1/orgs", staffToken, api.CreateOrgRequest{Name: "acme"})
	c := must[api.Connection](e, 201, "POST", "/api/v1/connections", org.APIKey, api.CreateConnectionRequest{Provider: "none", Name: "open"})
	if c.SecretCount == nil || *c.SecretCount != 0 || string(c.Config) != "{}" {
		t.Fatalf("none connection: %+v", c)
	}
	wantError(t, e.do("POST", "/api/v1/connections", org.APIKey, api.CreateConnectionRequest{Provider: "none", Name: "x", Secrets: []string{"s"}}),
		400, intake.EINVALID, "takes no secrets")
	wantError(t, e.do("POST", "/api/v1/connections", org.APIKey, api.CreateConnectionRequest{Provider: testProvider, Name: "x"}),
		400, intake.EINVALID, "needs at least one signing secret")
}

func TestReplacingSecretsSealsTheNewListToTheConnection(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	path := "/api/v1/connections/" + acme.conn.ID + "/secrets"

	rec := e.do("PUT", path, acme.org.APIKey, api.SecretsRequest{Secrets: []string{"whsec_old", "whsec_new"}})
	if rec.Code != 200 || contains(rec.Body.String(), "whsec_") {
		t.Fatalf("replace: %d %s", rec.Code, rec.Body)
	}
	stored, err := e.store.Connection(context.Background(), intake.Scope{}, acme.conn.ID)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := e.sealer.OpenSecrets(stored.SealedSecrets, []byte(acme.conn.ID))
	if err != nil || len(opened) != 2 || string(opened[0]) != "whsec_old" || string(opened[1]) != "whsec_new" {
		t.Fatalf("replaced secrets open to %q, %v", opened, err)
	}
	wantError(t, e.do("PUT", path, acme.org.APIKey, api.SecretsRequest{}), 400, intake.EINVALID, "at least one signing secret")
	wantError(t, e.do("PUT", path, globex.org.APIKey, api.SecretsRequest{Secrets: []string{"x"}}), 404, intake.ENOTFOUND, "not found")
	again, _ := e.store.Connection(context.Background(), intake.Scope{}, acme.conn.ID)
	if opened, _ := e.sealer.OpenSecrets(again.SealedSecrets, []byte(acme.conn.ID)); len(opened) != 2 {
		t.Fatalf("a refused request changed the secrets: %q", opened)
	}
}

func TestInvalidRequestsAre400WithAClearMessage(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	key := acme.org.APIKey
	tooMany := make([]string, 11)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint("s", i)
	}
	cases := []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", "/api/v1/orgs", `{"name":"x","color":"red"}`, `unknown field "color"`},
		{"POST", "/api/v1/orgs", `{"name":`, "malformed JSON"},
		{"POST", "/api/v1/orgs", ``, "must be a JSON object"},
		{"POST", "/api/v1/orgs", `[1]`, "must be a JSON object"},
		{"POST", "/api/v1/orgs", `{"name":"a"} {"name":"b"}`, "one JSON object"},
		{"POST", "/api/v1/orgs", `{"name":"  "}`, "name is required"},
		{"POST", "/api/v1/orgs", `{"name":7}`, "name must be a string"},
		{"POST", "/api/v1/connections", api.CreateConnectionRequest{Name: "x", Secrets: []string{"s"}}, "provider is required"},
		{"POST", "/api/v1/connections", api.CreateConnectionRequest{Provider: "nosuch", Name: "x", Secrets: []string{"s"}}, `unknown provider "nosuch"`},
		{"POST", "/api/v1/connections", api.CreateConnectionRequest{Provider: testProvider, Secrets: []string{"s"}}, "name is required"},
		{"POST", "/api/v1/connections", api.CreateConnectionRequest{Provider: testProvider, Name: "x", Secrets: []string{""}}, "secrets[0] is empty"},
		{"POST", "/api/v1/connections", api.CreateConnectionRequest{Provider: testProvider, Name: "x", Secrets: tooMany}, "at most 10 secrets"},
		{"POST", "/api/v1/connections", api.CreateConnectionRequest{Provider: testProvider, Name: "x", Secrets: []string{"s"}, Config: json.RawMessage(`{"bad":1}`)}, "bad is not a setting"},
		{"POST", "/api/v1/connections", api.CreateConnectionRequest{Provider: testProvider, Name: "x", Secrets: []string{"s"}, Config: json.RawMessage(`[1]`)}, "config must be a JSON object"},
		{"POST", "/api/v1/connections", `{"provider":"apitest","name":"x","secrets":"s"}`, "secrets must be an array"},
		{"GET", "/api/v1/connections/not-an-id", nil, "malformed id"},
		{"POST", "/api/v1/endpoints", `{}`, "connection_id is required"},
		{"POST", "/api/v1/endpoints", `{"connection_id":"42"}`, "connection_id \"42\" is not a valid id"},
		{"POST", "/api/v1/endpoints", `{"connection_id":"` + acme.conn.ID + `","max_body_bytes":0}`, "max_body_bytes must be between"},
		{"POST", "/api/v1/endpoints", `{"connection_id":"` + acme.conn.ID + `","max_body_bytes":"big"}`, "max_body_bytes must be an integer"},
		{"POST", "/api/v1/endpoints", `{"connection_id":"` + acme.conn.ID + `","rate_per_sec":-1}`, "rate_per_sec must not be negative"},
		{"POST", "/api/v1/endpoints", `{"connection_id":"` + acme.conn.ID + `","rate_per_sec":5,"burst":0}`, "burst must be at least 1"},
		{"PATCH", "/api/v1/endpoints/" + acme.ep.ID, `{"burst":-1}`, "burst must not be negative"},
		{"PATCH", "/api/v1/endpoints/" + acme.ep.ID, `{"enabled":"yes"}`, "enabled must be true or false"},
		{"GET", "/api/v1/messages?state=lost", nil, "state must be one of queued, processing"},
		{"GET", "/api/v1/messages?endpoint_id=nope", nil, "endpoint_id \"nope\" is not a valid id"},
		{"GET", "/api/v1/messages?limit=0", nil, "limit must be an integer between 1 and 500"},
		{"GET", "/api/v1/messages?limit=501", nil, "limit must be an integer between 1 and 500"},
		{"GET", "/api/v1/messages?limit=ten", nil, "limit must be an integer between 1 and 500"},
		{"GET", "/api/v1/messages?cursor=zzz", nil, "malformed cursor"},
		{"GET", "/api/v1/messages/123/body", nil, "malformed id"},
		{"GET", "/api/v1/events?state=done", nil, "state must be one of pending, delivered"},
	}
	for _, c := range cases {
		tok := key
		if c.path == "/api/v1/orgs" {
			tok = staffToken
		}
		rec := e.do(c.method, c.path, tok, c.body)
		var b api.ErrorBody
		json.Unmarshal(rec.Body.Bytes(), &b)
		if rec.Code != 400 || b.Error.Code != intake.EINVALID || !contains(b.Error.Message, c.want) {
			t.Errorf("%s %s %v: %d %s, want 400 mentioning %q", c.method, c.path, c.body, rec.Code, rec.Body, c.want)
		}
	}
}

func TestRequestBodiesOverOneMebibyteAre413(t *testing.T) {
	e := newEnv(t)
	big := `{"name":"` + strings.Repeat("a", 1<<20) + `"}`
	wantError(t, e.do("POST", "/api/v1/orgs", staffToken, big), 413, intake.ETOOLARGE, "exceeds")
}

// Asana hands its signing secret over in the webhook's handshake, which
// the API never shows (a credential header). A connection is created
// without secrets and adopts each one from its recorded handshake.
func TestAsanaConnectionAdoptsTheSecretOfItsRecordedHandshake(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	org := acme.org
	conn := must[api.Connection](e, 201, "POST", "/api/v1/connections", org.APIKey, api.CreateConnectionRequest{Provider: "asana", Name: "tasks"})
	if conn.SecretCount == nil || *conn.SecretCount != 0 {
		t.Fatalf("asana connection without secrets: %+v", conn)
	}
	ep := must[api.Endpoint](e, 201, "POST", "/api/v1/endpoints", org.APIKey, api.CreateEndpointRequest{ConnectionID: conn.ID})
	asana := tenant{org: org, conn: conn, ep: ep}
	const secret = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81"
	handshake := e.ingest(asana, "", http.Header{"X-Hook-Secret": {secret}}, "")
	delivery := e.ingest(asana, "", http.Header{"X-Hook-Signature": {"ab"}}, `{"events":[]}`)
	path := "/api/v1/connections/" + conn.ID + "/adopt-handshake-secret"

	shown := e.do("GET", "/api/v1/messages/"+handshake.ID, org.APIKey, nil)
	if shown.Code != 200 || contains(shown.Body.String(), secret) {
		t.Fatalf("the handshake's secret is shown: %d %s", shown.Code, shown.Body)
	}
	for range 2 { // adopting twice keeps one copy
		got := must[api.Connection](e, 200, "POST", path, org.APIKey, api.AdoptSecretRequest{MessageID: handshake.ID})
		if got.SecretCount == nil || *got.SecretCount != 1 {
			t.Fatalf("after adopting: %+v", got)
		}
	}
	stored, err := e.store.Connection(context.Background(), intake.Scope{}, conn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if opened, err := e.sealer.OpenSecrets(stored.SealedSecrets, []byte(conn.ID)); err != nil || len(opened) != 1 || string(opened[0]) != secret {
		t.Fatalf("adopted secrets open to %q, %v", opened, err)
	}
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", staffToken, nil)
	adopts := 0
	for _, a := range audit.Items {
		if a.Action == "connection.secrets.adopt" && a.TargetID == conn.ID {
			adopts++
		}
	}
	if adopts != 1 {
		t.Errorf("%d adoptions audited, want 1 (the second changed nothing)", adopts)
	}

	wantError(t, e.do("POST", path, org.APIKey, api.AdoptSecretRequest{MessageID: delivery.ID}), 400, intake.EINVALID, "not a asana handshake")
	other := e.ingest(acme, "", http.Header{"X-Hook-Secret": {"x"}}, "")
	wantError(t, e.do("POST", path, org.APIKey, api.AdoptSecretRequest{MessageID: other.ID}), 400, intake.EINVALID, "was not received for connection")
	wantError(t, e.do("POST", path, org.APIKey, api.AdoptSecretRequest{MessageID: "nope"}), 400, intake.EINVALID, "message_id")
	wantError(t, e.do("POST", "/api/v1/connections/"+acme.conn.ID+"/adopt-handshake-secret", org.APIKey, api.AdoptSecretRequest{MessageID: other.ID}),
		400, intake.EINVALID, "does not hand its secret over")
}
