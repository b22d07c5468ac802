package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/schema"
)

// eventTypesView is the catalog page: the event types received, with
// their counts, optionally of one connection.
type eventTypesView struct {
	Items       []intake.EventType
	Connections []option
	Connection  string
}

func (c *Console) eventTypes(w http.ResponseWriter, r *http.Request, s *session) error {
	conn := r.URL.Query().Get("connection")
	all, err := c.ctl.EventTypes(r.Context(), s.caller(), "")
	if err != nil {
		return err
	}
	v := eventTypesView{Connection: conn}
	seen := map[string]bool{}
	for _, t := range all {
		if !seen[t.ConnectionID] {
			seen[t.ConnectionID] = true
			v.Connections = append(v.Connections, option{Value: t.ConnectionID, Label: t.ConnectionName})
		}
		if conn == "" || t.ConnectionID == conn {
			v.Items = append(v.Items, t)
		}
	}
	c.render(w, r, s, http.StatusOK, "event-types", "Event types", v)
	return nil
}

// eventTypeView is an event type's page: its counts, its schema as a
// tree, its changes and the example.
type eventTypeView struct {
	T        intake.EventTypeDetail
	Tree     []*fieldNode
	Example  shownBody
	SchemaAt string // where the schema downloads
	MaxDay   int64
}

// fieldNode is one place of a schema in the page's tree.
type fieldNode struct {
	schema.Field
	Children []*fieldNode
}

// schemaTree nests a schema's fields by depth.
func schemaTree(n *schema.Node) []*fieldNode {
	var roots []*fieldNode
	var stack []*fieldNode
	for _, f := range schema.Fields(n) {
		node := &fieldNode{Field: f}
		stack = stack[:min(len(stack), f.Depth)]
		if len(stack) == 0 {
			roots = append(roots, node)
		} else {
			parent := stack[len(stack)-1]
			parent.Children = append(parent.Children, node)
		}
		stack = append(stack, node)
	}
	return roots
}

func (c *Console) eventType(w http.ResponseWriter, r *http.Request, s *session) error {
	conn, typ := r.PathValue("connection"), r.PathValue("type")
	d, err := c.ctl.EventType(r.Context(), s.caller(), conn, typ)
	if err != nil {
		return err
	}
	if r.URL.Query().Get("download") == "schema" {
		if d.Schema == nil {
			return intake.Errorf(intake.ENOTFOUND, "no schema learnt yet for %s", typ)
		}
		name := strings.NewReplacer("/", "_", "\"", "_", "\\", "_").Replace(typ) + ".schema.json"
		w.Header().Set("Content-Type", "application/schema+json")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		_, err := w.Write(d.Schema)
		return err
	}
	n, err := schema.Parse(d.Schema)
	if err != nil {
		return err
	}
	v := eventTypeView{T: d, Tree: schemaTree(n), Example: showBody(d.Example),
		SchemaAt: "/console/event-types/" + url.PathEscape(d.ConnectionID) + "/" + url.PathEscape(d.Type) + "?download=schema"}
	for _, day := range d.Days {
		v.MaxDay = max(v.MaxDay, day.Count)
	}
	c.render(w, r, s, http.StatusOK, "event-type", d.Type, v)
	return nil
}
