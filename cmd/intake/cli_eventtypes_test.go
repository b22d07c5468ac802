package main

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/catalog"
	"github.com/intakehq/intake/control"
)

func TestCLIEventTypesExportPrintsTheAsyncAPIDocumentOfAConnectionNamedOrTheOrg(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	other := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "other"))
	otherEp := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", other.ID))
	l := catalog.New(catalog.Config{Store: s.store})
	l.Observe([]intake.Event{s.settled(t, org, conn, ep, "shop/order paid", `order 1`, `{"first name":"Ann"}`),
		s.settled(t, org, other, otherEp, "other.type", `other`, `{}`)})
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		tok   string
		args  []string
		types int
	}{
		{org.APIKey, []string{"event-types", "export", "--asyncapi", "--connection", "open"}, 1},
		{org.APIKey, []string{"event-types", "export", "--asyncapi"}, 2},
		{staffToken, []string{"event-types", "export", "--asyncapi", "--org", org.ID}, 2},
	} {
		doc := decodeOut[control.AsyncAPI](t, s.mustRun(t, c.tok, c.args...))
		if doc.AsyncAPI != "3.0.0" || len(doc.Channels) != c.types {
			t.Fatalf("%v: %+v", c.args, doc)
		}
		for key, ch := range doc.Channels {
			if ch.Messages[key].Payload == nil || doc.Operations["receive."+key].Action != "receive" {
				t.Errorf("%v: channel %s %+v", c.args, key, ch)
			}
		}
		if c.types == 1 && doc.Channels["shop_order_paid"].Title != "shop/order paid" {
			t.Errorf("%v: channels %+v", c.args, doc.Channels)
		}
	}
	if _, err := s.run(t, staffToken, "event-types", "export", "--asyncapi"); err == nil {
		t.Error("staff naming no org nor connection got a document")
	}
}
