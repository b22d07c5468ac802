package schema

import (
	"encoding/json"
	"fmt"
)

// wire is a Node as JSON Schema writes it.
type wire struct {
	Schema               string           `json:"$schema,omitempty"`
	Type                 json.RawMessage  `json:"type,omitempty"`
	Format               string           `json:"format,omitempty"`
	Properties           map[string]*Node `json:"properties,omitempty"`
	Required             []string         `json:"required,omitempty"`
	AdditionalProperties *Node            `json:"additionalProperties,omitempty"`
	Items                *Node            `json:"items,omitempty"`
}

func (n *Node) wire() wire {
	var w wire
	names := n.Types.Names()
	switch len(names) {
	case 0:
	case 1:
		w.Type, _ = json.Marshal(names[0])
	default:
		w.Type, _ = json.Marshal(names)
	}
	if n.Types&String != 0 {
		w.Format = n.Format
	}
	if n.Types&Object != 0 {
		w.Properties, w.Required, w.AdditionalProperties = n.Properties, n.Required, n.Values
	}
	if n.Types&Array != 0 {
		w.Items = n.Items
	}
	return w
}

// MarshalJSON writes n as a JSON Schema (without $schema: see Document).
func (n *Node) MarshalJSON() ([]byte, error) { return json.Marshal(n.wire()) }

// Document writes n as a whole JSON Schema document, declaring its dialect.
func Document(n *Node) []byte {
	w := n.wire()
	w.Schema = Dialect
	b, _ := json.Marshal(w) // a Node always encodes
	return b
}

// UnmarshalJSON reads a schema this package wrote.
func (n *Node) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*n = Node{Format: w.Format, Properties: w.Properties, Required: w.Required, Values: w.AdditionalProperties, Items: w.Items}
	if len(w.Type) == 0 {
		return nil
	}
	var names []string
	if err := json.Unmarshal(w.Type, &names); err != nil {
		var one string
		if err := json.Unmarshal(w.Type, &one); err != nil {
			return fmt.Errorf("schema: type must be a name or a list of names")
		}
		names = []string{one}
	}
	for _, name := range names {
		t, ok := typeNamed(name)
		if !ok {
			return fmt.Errorf("schema: unknown type %q", name)
		}
		n.Types |= t
	}
	if n.Types&Object != 0 && n.Properties == nil && n.Values == nil {
		n.Properties = map[string]*Node{}
	}
	return nil
}

// Parse reads a schema document (or a schema) this package wrote; nil for
// empty input, as nothing has been seen.
func Parse(b []byte) (*Node, error) {
	if len(b) == 0 {
		return nil, nil
	}
	n := &Node{}
	if err := json.Unmarshal(b, n); err != nil {
		return nil, err
	}
	return n, nil
}

func typeNamed(name string) (Type, bool) {
	for _, tn := range typeNames {
		if tn.name == name {
			return tn.t, true
		}
	}
	return 0, false
}
