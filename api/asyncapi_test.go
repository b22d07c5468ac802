package api_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
)

// asyncAPIEnv is a store whose catalog holds types an AsyncAPI document
// must carry with care: field names and type names that are not
// identifiers, two types that sanitise to one key, a type with braces (a
// channel parameter's syntax), and a second connection and org.
type asyncAPIEnv struct {
	*env
	acme, globex tenant
	second       api.Connection
}

func newAsyncAPIEnv(t *testing.T) asyncAPIEnv {
	e := asyncAPIEnv{env: newEnv(t)}
	e.acme, e.globex = e.newTenant("acme"), e.newTenant("globex")
	e.second = must[api.Connection](e.env, 201, "POST", "/api/v1/connections", e.acme.org.APIKey, api.CreateConnectionRequest{
		Provider: testProvider, Name: "second account", Secrets: []string{"whsec_2"}})
	var events []intake.Event
	add := func(tn tenant, conn, typ, data string) {
		ev := e.event(tn, "placeholder")
		ev.Type, ev.Data = typ, []byte(data)
		if conn != "" {
			ev.ConnectionID = conn
		}
		events = append(events, ev)
	}
	add(e.acme, "", "test.invoice.paid", `{"id":"in_1","first name":"Ada","a.b":1,"ü":true,"nested":{"x/y":["2026-12-05T00:00:00Z"]},"$ref":"#/x"}`)
	add(e.acme, "", "test.invoice.paid", `{"id":"in_2","first name":null,"a.b":1.5,"ü":true,"nested":{"x/y":[]},"$ref":"#/x"}`)
	add(e.acme, "", "urn:acme/order created", `{"order":{"lines":[{"sku":"a","qty":2}]},"by id":{"k":1}}`)
	add(e.acme, "", "urn_acme_order_created", `[1,"two",null]`)
	add(e.acme, "", "{tenant}.deleted?x#y", `"just a string"`)
	add(e.acme, e.second.ID, "test.invoice.paid", `{"id":"in_3"}`)
	add(e.globex, "", "globex.secret", `{"code":1}`)
	e.learn(events...)
	return e
}

func TestAsyncAPIDocumentDescribesEachTypeAsTheEnvelopeConsumersReceive(t *testing.T) {
	e := newAsyncAPIEnv(t)
	doc := must[control.AsyncAPI](e.env, 200, "GET", "/api/v1/asyncapi.json?connection_id="+e.acme.conn.ID, e.acme.org.APIKey, nil)
	if doc.AsyncAPI != "3.0.0" || doc.Info.Title != "intake events of connection acme account" || doc.Info.Version == "" {
		t.Fatalf("document %+v", doc.Info)
	}
	keys := func(m map[string]control.AsyncAPIChannel) []string {
		var out []string
		for k, c := range m {
			out = append(out, k+"="+c.Title)
		}
		return sorted(out)
	}
	want := []string{"_tenant_.deleted_x_y={tenant}.deleted?x#y", "test.invoice.paid=test.invoice.paid",
		"urn_acme_order_created-2=urn_acme_order_created", "urn_acme_order_created=urn:acme/order created"}
	if got := keys(doc.Channels); !reflect.DeepEqual(got, want) {
		t.Fatalf("channels %v, want %v", got, want)
	}
	if a := doc.Channels["_tenant_.deleted_x_y"].Address; a != nil {
		t.Errorf("a type with braces has address %q: a parser reads them as a parameter", *a)
	}
	ch := doc.Channels["test.invoice.paid"]
	if ch.Address == nil || *ch.Address != "test.invoice.paid" {
		t.Errorf("address %v", ch.Address)
	}
	msg := ch.Messages["test.invoice.paid"]
	if msg.Name != "test.invoice.paid" || msg.Title != "test.invoice.paid" || msg.ContentType != "application/json" {
		t.Errorf("message %+v", msg)
	}
	// The payload is the envelope; its data the type's inferred schema,
	// a field named "$ref" matched by pattern (a reference to tools).
	payload, _ := json.Marshal(msg.Payload)
	var envelope struct {
		Required   []string `json:"required"`
		Properties struct {
			Type         map[string]string `json:"type"`
			ConnectionID map[string]string `json:"connection_id"`
			Data         struct {
				Properties        map[string]json.RawMessage `json:"properties"`
				PatternProperties map[string]json.RawMessage `json:"patternProperties"`
				Required          []string                   `json:"required"`
			} `json:"data"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(payload, &envelope); err != nil {
		t.Fatal(err)
	}
	var envFields []string
	for _, f := range reflect.VisibleFields(reflect.TypeOf(intake.Envelope{})) {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if opts == "" {
			envFields = append(envFields, name)
		}
	}
	if !reflect.DeepEqual(sorted(envelope.Required), sorted(envFields)) {
		t.Errorf("the envelope requires %v, intake.Envelope always carries %v", envelope.Required, envFields)
	}
	if envelope.Properties.Type["const"] != "test.invoice.paid" || envelope.Properties.ConnectionID["const"] != e.acme.conn.ID {
		t.Errorf("type %v, connection_id %v", envelope.Properties.Type, envelope.Properties.ConnectionID)
	}
	d := envelope.Properties.Data
	if string(d.Properties["first name"]) != `{"type":["null","string"]}` || string(d.Properties["a.b"]) != `{"type":"number"}` ||
		string(d.Properties["nested"]) != `{"properties":{"x/y":{"items":{"format":"date-time","type":"string"},"type":"array"}},"required":["x/y"],"type":"object"}` ||
		d.Properties["$ref"] != nil || string(d.PatternProperties[`^\$ref$`]) != `{"type":"string"}` ||
		strings.Join(d.Required, ",") != "$ref,a.b,first name,id,nested,ü" {
		t.Errorf("data %s", payload)
	}
	headers, _ := json.Marshal(msg.Headers["required"])
	if string(headers) != `["webhook-id","webhook-timestamp","webhook-signature"]` {
		t.Errorf("headers %v", msg.Headers)
	}
	op := doc.Operations["receive.test.invoice.paid"]
	if op.Action != "receive" || op.Channel.Ref != "#/channels/test.invoice.paid" ||
		len(op.Messages) != 1 || op.Messages[0].Ref != "#/channels/test.invoice.paid/messages/test.invoice.paid" {
		t.Errorf("operation %+v", op)
	}

	// Without a connection: the org's every type, each channel named
	// after its connection too; another org's never.
	all := must[control.AsyncAPI](e.env, 200, "GET", "/api/v1/asyncapi.json", e.acme.org.APIKey, nil)
	if len(all.Channels) != 5 || all.Channels["second_account.test.invoice.paid"].Title != "test.invoice.paid" ||
		all.Channels["acme_account.test.invoice.paid"].Title != "test.invoice.paid" || all.Info.Title != "intake events of org acme" {
		t.Errorf("the org's document: %v", keys(all.Channels))
	}
	byStaff := must[control.AsyncAPI](e.env, 200, "GET", "/api/v1/asyncapi.json?org_id="+e.acme.org.ID, staffToken, nil)
	if !reflect.DeepEqual(byStaff, all) {
		t.Errorf("staff naming the org read %v, the org %v", keys(byStaff.Channels), keys(all.Channels))
	}

	for _, c := range []struct {
		path, tok string
		status    int
		want      string
	}{
		{"/api/v1/asyncapi.json", staffToken, 400, "must name an org"},
		{"/api/v1/asyncapi.json?connection_id=" + e.acme.conn.ID, e.globex.org.APIKey, 404, "not found"},
		{"/api/v1/asyncapi.json?org_id=" + e.acme.org.ID, e.globex.org.APIKey, 404, "not found"},
		{"/api/v1/asyncapi.json?connection_id=nope", e.acme.org.APIKey, 400, "is not a valid id"},
		{"/api/v1/asyncapi.json?type=x", e.acme.org.APIKey, 400, "type"},
	} {
		if rec := e.do("GET", c.path, c.tok, nil); rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("GET %s: %d %s, want %d %q", c.path, rec.Code, rec.Body, c.status, c.want)
		}
	}
}

// TestAsyncAPIDocumentsPassTheOfficialParser: the documents of a catalog
// with hostile names, by connection and by org, parse with
// @asyncapi/parser (scripts/asyncapi) without an error; a document it
// must refuse (no info.version) is refused, so the parser is really
// judging.
func TestAsyncAPIDocumentsPassTheOfficialParser(t *testing.T) {
	validate := asyncAPIValidator(t)
	e := newAsyncAPIEnv(t)
	dir := t.TempDir()
	var files []string
	for _, d := range []struct{ name, path string }{
		{"connection", "/api/v1/asyncapi.json?connection_id=" + e.acme.conn.ID},
		{"org", "/api/v1/asyncapi.json"},
		{"empty", "/api/v1/asyncapi.json?connection_id=" + e.globex.conn.ID},
	} {
		name, path := d.name, d.path
		tok := e.acme.org.APIKey
		if name == "empty" {
			tok = staffToken
		}
		rec := e.do("GET", path, tok, nil)
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		file := filepath.Join(dir, name+".json")
		if err := os.WriteFile(file, rec.Body.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	out, err := validate(files...)
	if err != nil {
		t.Fatalf("the parser refuses intake's documents: %v\n%s", err, out)
	}
	t.Logf("the parser's diagnostics:\n%s", out)

	// The connection's document without the version AsyncAPI requires of
	// its info: the parser must refuse it.
	var doc map[string]any
	raw, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["channels"].(map[string]any)["test.invoice.paid"] == nil {
		t.Fatalf("the connection's document has no channel test.invoice.paid: %s", raw)
	}
	delete(doc["info"].(map[string]any), "version")
	bad := filepath.Join(dir, "bad.json")
	raw, _ = json.Marshal(doc)
	if err := os.WriteFile(bad, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := validate(bad); err == nil {
		t.Fatalf("the parser took a document whose info has no version:\n%s", out)
	}
}

// asyncAPIValidator runs scripts/asyncapi/validate.mjs; in CI a missing
// node or parser fails the test, elsewhere it skips it.
func asyncAPIValidator(t *testing.T) func(files ...string) (string, error) {
	t.Helper()
	dir, err := filepath.Abs("../scripts/asyncapi")
	if err != nil {
		t.Fatal(err)
	}
	missing := func(what string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; .ci/run installs it", what)
		}
		t.Skipf("%s (cd scripts/asyncapi && npm ci)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@asyncapi", "parser", "package.json")); err != nil {
		missing("@asyncapi/parser is not installed in scripts/asyncapi")
	}
	return func(files ...string) (string, error) {
		cmd := exec.Command(node, append([]string{filepath.Join(dir, "validate.mjs")}, files...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
