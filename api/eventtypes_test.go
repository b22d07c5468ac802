package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestEventTypesListTheCatalogAndShowASchemaWithItsChanges(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	first := e.event(acme, "test.invoice.paid")
	first.Data = []byte(`{"id":"in_1","amount":100}`)
	e.learn(first)
	e.clock.Advance(time.Second)
	drifted := e.event(acme, "test.invoice.paid")
	drifted.Data, drifted.ReceivedAt = []byte(`{"id":"in_2","amount":"100"}`), e.clock.Now()
	e.learn(drifted)

	list := must[api.List[api.EventType]](e, 200, "GET", "/api/v1/event-types", acme.org.APIKey, nil)
	if len(list.Items) != 1 {
		t.Fatalf("list = %+v", list.Items)
	}
	if got := list.Items[0]; got.Type != "test.invoice.paid" || got.ConnectionID != acme.conn.ID || got.ConnectionName != "acme account" ||
		got.Total != 2 || got.Count24h != 2 || !got.FirstSeenAt.Equal(t0) || !got.LastSeenAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("listed %+v", got)
	}
	byConn := must[api.List[api.EventType]](e, 200, "GET", "/api/v1/event-types?connection_id="+acme.conn.ID, staffToken, nil)
	if len(byConn.Items) != 1 {
		t.Fatalf("the connection's list = %+v", byConn.Items)
	}

	// The connection may be left out while one connection has the type.
	for _, path := range []string{"/api/v1/event-types/test.invoice.paid?connection_id=" + acme.conn.ID, "/api/v1/event-types/test.invoice.paid"} {
		d := must[api.EventTypeDetail](e, 200, "GET", path, acme.org.APIKey, nil)
		var doc struct {
			Schema     string                     `json:"$schema"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(d.Schema, &doc); err != nil || doc.Schema != "https://json-schema.org/draft/2020-12/schema" ||
			string(doc.Properties["amount"]) != `{"type":["integer","string"]}` || strings.Join(doc.Required, ",") != "amount,id" {
			t.Fatalf("schema %s: %v", d.Schema, err)
		}
		if d.Example == nil || d.Example.EventID != drifted.ID || string(d.Example.Data) != string(drifted.Data) {
			t.Fatalf("example %+v", d.Example)
		}
		if len(d.Days) != 1 || d.Days[0].Day != t0.Format("2006-01-02") || d.Days[0].Count != 2 {
			t.Fatalf("days %+v", d.Days)
		}
		if len(d.Changes) != 1 || d.Changes[0].Path != "$.amount" || d.Changes[0].Change != intake.ChangeTypeChanged ||
			strings.Join(d.Changes[0].From, ",") != "integer" || strings.Join(d.Changes[0].To, ",") != "string" ||
			d.Changes[0].ExampleEventID != drifted.ID || !d.Changes[0].At.Equal(t0.Add(time.Second)) {
			t.Fatalf("changes %+v", d.Changes)
		}
	}

	// A type two connections have received needs the connection named.
	other := must[api.Connection](e, 201, "POST", "/api/v1/connections", acme.org.APIKey, api.CreateConnectionRequest{
		Provider: testProvider, Name: "second account", Secrets: []string{"whsec_2"}})
	twin := first
	twin.ID, twin.ConnectionID = intake.NewID(), other.ID
	e.learn(twin)
	rec := e.do("GET", "/api/v1/event-types/test.invoice.paid", acme.org.APIKey, nil)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "connection_id") {
		t.Fatalf("a type of two connections without one named: %d %s", rec.Code, rec.Body)
	}
	for path, status := range map[string]int{
		"/api/v1/event-types/never.seen":                           404,
		"/api/v1/event-types/never.seen?connection_id=" + other.ID: 404,
		"/api/v1/event-types/test.invoice.paid?connection_id=x":    400,
		"/api/v1/event-types?connection_id=x":                      400,
		"/api/v1/event-types/" + strings.Repeat("t", 201):          400,
	} {
		if rec := e.do("GET", path, acme.org.APIKey, nil); rec.Code != status {
			t.Errorf("GET %s: %d, want %d: %s", path, rec.Code, status, rec.Body)
		}
	}
}
