package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/internal/schema"
)

// EventTypesCmd reads the event-type catalog.
type EventTypesCmd struct {
	List   EventTypesListCmd   `cmd:"" help:"List the event types received, with their counts."`
	Show   EventTypesShowCmd   `cmd:"" help:"Show an event type: its inferred JSON Schema as a tree, an example and its changes of shape."`
	Export EventTypesExportCmd `cmd:"" help:"Print the event types as a document for other tools: --asyncapi, an AsyncAPI 3.0 document."`
}

// EventTypesListCmd lists the catalog.
type EventTypesListCmd struct {
	Connection string `name:"connection" help:"Only this connection's types (its id or name)."`
	listFlags
}

// Run lists the event types.
func (c *EventTypesListCmd) Run(cl *Client) error {
	q, err := connectionQuery(cl, c.Connection)
	if err != nil {
		return err
	}
	return printList(cl, c.listFlags, "/api/v1/event-types", q,
		[]string{"TYPE", "CONNECTION", "LAST SEEN", "24H", "TOTAL", "FIRST SEEN"},
		func(t api.EventType) []string {
			return []string{t.Type, t.ConnectionName, timeCell(t.LastSeenAt), strconv.FormatInt(t.Count24h, 10),
				strconv.FormatInt(t.Total, 10), timeCell(t.FirstSeenAt)}
		})
}

// EventTypesShowCmd shows one event type.
type EventTypesShowCmd struct {
	outputFlags
	Type       string `arg:"" help:"The event type, e.g. stripe.invoice.paid."`
	Connection string `name:"connection" help:"The connection that received it (its id or name); needed when several did."`
	Schema     bool   `name:"schema" help:"Print only the JSON Schema, e.g. to save it: --schema > invoice.schema.json."`
}

// Run shows the event type.
func (c *EventTypesShowCmd) Run(cl *Client) error {
	q := url.Values{}
	if c.Connection != "" {
		id, err := cl.connectionID(c.Connection, c.Type)
		if err != nil {
			return err
		}
		q.Set("connection_id", id)
	}
	var d api.EventTypeDetail
	raw, err := cl.get(idPath("/api/v1/event-types", c.Type), q, &d)
	if err != nil {
		return err
	}
	switch {
	case c.Schema:
		if d.Schema == nil {
			return fmt.Errorf("no schema learnt yet for %s", c.Type)
		}
		return cl.printJSON(d.Schema)
	case c.JSON:
		return cl.printJSON(raw)
	}
	return cl.printEventType(d)
}

// EventTypesExportCmd prints the catalog as an AsyncAPI document.
type EventTypesExportCmd struct {
	AsyncAPI   bool   `name:"asyncapi" required:"" help:"An AsyncAPI 3.0 document: a channel per type, its message the envelope consumers receive with the type's inferred schema as data."`
	Connection string `name:"connection" help:"Only this connection's types (its id or name)."`
	Org        string `name:"org" help:"Org id (staff, without --connection; an org key: its own)."`
}

// Run prints the document.
func (c *EventTypesExportCmd) Run(cl *Client) error {
	q, err := connectionQuery(cl, c.Connection)
	if err != nil {
		return err
	}
	if c.Org != "" {
		q.Set("org_id", c.Org)
	}
	raw, err := cl.call(http.MethodGet, "/api/v1/asyncapi.json", q, nil)
	if err != nil {
		return err
	}
	return cl.printJSON(raw)
}

// connectionID reads --connection: an id as it is, else the name of a
// connection that has received typ (any type when typ is "").
func (cl *Client) connectionID(v, typ string) (string, error) {
	if intake.ValidID(v) {
		return v, nil
	}
	var list api.List[api.EventType]
	if _, err := cl.get("/api/v1/event-types", nil, &list); err != nil {
		return "", err
	}
	seen := map[string]bool{}
	for _, t := range list.Items {
		if t.ConnectionName == v && (typ == "" || t.Type == typ) {
			seen[t.ConnectionID] = true
		}
	}
	switch len(seen) {
	case 0:
		return "", fmt.Errorf("no connection named %q has received %s", v, cmpOr(typ, "an event"))
	case 1:
		for id := range seen {
			return id, nil
		}
	}
	return "", fmt.Errorf("%d connections are named %q: give the connection's id", len(seen), v)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// printEventType prints an event type for a person: its counts, its schema
// as a tree, its changes and its example.
func (cl *Client) printEventType(d api.EventTypeDetail) error {
	w := cl.stdout()
	fmt.Fprintf(w, "type:          %s\nconnection:    %s (%s)\nfirst seen:    %s\nlast seen:     %s\nlast 24 hours: %d\ntotal:         %d\n",
		d.Type, d.ConnectionName, d.ConnectionID, timeCell(d.FirstSeenAt), timeCell(d.LastSeenAt), d.Count24h, d.Total)
	n, err := schema.Parse(d.Schema)
	if err != nil {
		return fmt.Errorf("the server's schema: %w", err)
	}
	fmt.Fprintln(w, "\nschema:")
	if n == nil {
		fmt.Fprintln(w, "  none learnt yet")
	} else {
		var rows [][]string
		for _, f := range schema.Fields(n) {
			req := ""
			if f.Required && f.Depth > 0 {
				req = "required"
			}
			rows = append(rows, []string{strings.Repeat("  ", f.Depth) + f.Name, strings.Join(f.Types, "|"), req, f.Format})
		}
		if err := cl.printTable([]string{"FIELD", "TYPE", "REQUIRED", "FORMAT"}, rows); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nchanges:")
	if len(d.Changes) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		var rows [][]string
		for _, c := range d.Changes {
			rows = append(rows, []string{timeCell(c.At), c.Path, c.Change, cmpOr(strings.Join(c.From, "|"), "-"),
				cmpOr(strings.Join(c.To, "|"), "-"), c.ExampleEventID})
		}
		if err := cl.printTable([]string{"AT", "PATH", "CHANGE", "FROM", "TO", "EVENT"}, rows); err != nil {
			return err
		}
	}
	if d.Example != nil {
		var pretty bytes.Buffer
		if json.Indent(&pretty, d.Example.Data, "  ", "  ") != nil {
			pretty.Reset()
			pretty.Write(d.Example.Data)
		}
		fmt.Fprintf(w, "\nexample (event %s):\n  %s\n", d.Example.EventID, pretty.String())
	}
	return nil
}

// connectionQuery is the query naming a connection given by id or name
// (empty: none).
func connectionQuery(cl *Client, connection string) (url.Values, error) {
	q := url.Values{}
	if connection == "" {
		return q, nil
	}
	id, err := cl.connectionID(connection, "")
	if err != nil {
		return nil, err
	}
	q.Set("connection_id", id)
	return q, nil
}
