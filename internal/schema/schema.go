// Package schema infers a JSON Schema (draft 2020-12) from the JSON values
// an event type has carried, merges what each new value shows into it, and
// says how a value's shape differs from what was seen before (the drift the
// event-type catalog records). It is pure: values in, schemas and changes
// out.
//
// An inferred schema says, at each place in the value: the JSON types seen
// there (several when they differed: ["string","null"]), for objects the
// properties seen and which were present in every object (required), for
// arrays the schema of all their items, and for strings a format
// (date-time, uuid, email, uri) when every string seen there had it. Every
// value the schema was inferred from validates against it.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Dialect is the JSON Schema draft an inferred document declares.
const Dialect = "https://json-schema.org/draft/2020-12/schema"

// MaxProperties is the most properties an object's schema lists. An object
// seen with more distinct keys is a map (keyed by ids, say): its schema
// keeps one schema for all its values (additionalProperties) instead, so
// the schema of a type whose payloads carry ever new keys stays bounded.
const MaxProperties = 200

// MaxDepth is how deep the schema follows nested values; below it any
// value is accepted ({}).
const MaxDepth = 24

// Type is a set of JSON Schema types.
type Type uint8

// The JSON Schema types, in the order a schema lists them.
const (
	Null Type = 1 << iota
	Boolean
	Integer
	Number // any number; an integer is one too
	String
	Array
	Object
)

var typeNames = []struct {
	t    Type
	name string
}{{Null, "null"}, {Boolean, "boolean"}, {Integer, "integer"}, {Number, "number"}, {String, "string"}, {Array, "array"}, {Object, "object"}}

// Names lists the types of the set, in schema order.
func (t Type) Names() []string {
	out := []string{}
	for _, tn := range typeNames {
		if t&tn.t != 0 {
			out = append(out, tn.name)
		}
	}
	return out
}

func (t Type) String() string { return strings.Join(t.Names(), "|") }

// normal folds integer into number when both are in the set.
func (t Type) normal() Type {
	if t&Number != 0 {
		return t &^ Integer
	}
	return t
}

// accepts reports whether a value of type v is one of t's: an integer is a
// number.
func (t Type) accepts(v Type) bool {
	if t&Number != 0 && v&Integer != 0 {
		v = v&^Integer | Number
	}
	return v&^t == 0
}

// Node is the inferred schema of the values seen at one place. The zero
// Node with no types accepts anything ({}): what lies below MaxDepth.
type Node struct {
	Types Type
	// Format is what every string seen here matched ("" when they
	// differed); meaningful only when Types has String.
	Format string
	// Properties are the keys seen in the objects here, and Required those
	// present in every one; both nil once the objects are a map (Values).
	Properties map[string]*Node
	Required   []string
	// Values is the schema of every value of a map-like object.
	Values *Node
	// Items is the schema of every array item seen here; nil while every
	// array was empty.
	Items *Node
}

// Infer reads one JSON value and infers its schema.
func Infer(data []byte) (*Node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("schema: more than one JSON value")
	}
	return InferValue(v), nil
}

// InferValue infers the schema of a decoded JSON value (as encoding/json
// decodes into any, numbers as json.Number or float64).
func InferValue(v any) *Node { return infer(v, 0) }

func infer(v any, depth int) *Node {
	if depth >= MaxDepth {
		return &Node{}
	}
	switch v := v.(type) {
	case nil:
		return &Node{Types: Null}
	case bool:
		return &Node{Types: Boolean}
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return &Node{Types: Number}
		}
		return &Node{Types: Integer}
	case float64:
		if v == float64(int64(v)) {
			return &Node{Types: Integer}
		}
		return &Node{Types: Number}
	case string:
		return &Node{Types: String, Format: FormatOf(v)}
	case []any:
		n := &Node{Types: Array}
		for _, item := range v {
			if it := infer(item, depth+1); n.Items == nil {
				n.Items = it
			} else {
				n.Items = merge(n.Items, it)
			}
		}
		return n
	case map[string]any:
		n := &Node{Types: Object, Properties: make(map[string]*Node, len(v)), Required: slices.Sorted(maps.Keys(v))}
		for k, item := range v {
			n.Properties[k] = infer(item, depth+1)
		}
		return n.bounded()
	}
	return &Node{}
}

// Merge returns the schema of the values of both a and b; neither is
// changed. A nil Node is "nothing seen yet".
func Merge(a, b *Node) *Node { return merge(a.Clone(), b) }

// merge merges b into a, which it may change, and returns the result.
func merge(a, b *Node) *Node {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b.Clone()
	case a.Types == 0 || b.Types == 0:
		return &Node{} // anything merged with anything
	}
	switch {
	case a.Types&String == 0:
		a.Format = b.Format
	case b.Types&String != 0 && a.Format != b.Format:
		a.Format = ""
	}
	if b.Types&Object != 0 {
		if a.Types&Object == 0 {
			a.Properties, a.Required, a.Values = cloneProps(b.Properties), slices.Clone(b.Required), b.Values.Clone()
		} else {
			a.mergeObject(b)
		}
	}
	if b.Types&Array != 0 {
		a.Items = merge(a.Items, b.Items)
	}
	a.Types = (a.Types | b.Types).normal()
	return a
}

// mergeObject merges the object part of b into a's, both having seen
// objects: keys in either, required in both.
func (a *Node) mergeObject(b *Node) {
	if a.Values != nil || b.Values != nil {
		a.Values = merge(a.Values, b.Values)
		for _, p := range a.Properties {
			a.Values = merge(a.Values, p)
		}
		for _, p := range b.Properties {
			a.Values = merge(a.Values, p)
		}
		a.Properties, a.Required = nil, nil
		return
	}
	for k, p := range b.Properties {
		a.Properties[k] = merge(a.Properties[k], p)
	}
	a.Required = slices.DeleteFunc(a.Required, func(k string) bool { return !slices.Contains(b.Required, k) })
	a.bounded()
}

// bounded turns an object with more than MaxProperties keys into a map.
func (a *Node) bounded() *Node {
	if len(a.Properties) <= MaxProperties {
		return a
	}
	var values *Node
	for _, k := range slices.Sorted(maps.Keys(a.Properties)) {
		values = merge(values, a.Properties[k])
	}
	a.Properties, a.Required, a.Values = nil, nil, values
	return a
}

// Clone returns a deep copy of n.
func (n *Node) Clone() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Properties = cloneProps(n.Properties)
	c.Required = slices.Clone(n.Required)
	c.Values = n.Values.Clone()
	c.Items = n.Items.Clone()
	return &c
}

func cloneProps(ps map[string]*Node) map[string]*Node {
	if ps == nil {
		return nil
	}
	out := make(map[string]*Node, len(ps))
	for k, p := range ps {
		out[k] = p.Clone()
	}
	return out
}

// Equal reports whether a and b are the same schema.
func Equal(a, b *Node) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
