package schema

import (
	"maps"
	"slices"
)

// Field is one place in a schema, for showing the schema as a tree.
type Field struct {
	Path     string // JSONPath, as Change names it
	Name     string // the property's name, [*] for items, * for a map's values, $ for the value
	Depth    int    // 0 for the value itself
	Types    []string
	Required bool // present in every object that held it
	Format   string
}

// Fields lists a schema's places depth first, properties by name, each
// after the place that holds it.
func Fields(n *Node) []Field {
	var out []Field
	fields(&out, "$", "$", 0, true, n)
	return out
}

func fields(out *[]Field, path, name string, depth int, required bool, n *Node) {
	if n == nil {
		return
	}
	f := Field{Path: path, Name: name, Depth: depth, Types: n.Types.Names(), Required: required}
	if n.Types&String != 0 {
		f.Format = n.Format
	}
	*out = append(*out, f)
	if n.Types&Object != 0 {
		for _, k := range slices.Sorted(maps.Keys(n.Properties)) {
			fields(out, Child(path, k), k, depth+1, slices.Contains(n.Required, k), n.Properties[k])
		}
		fields(out, path+".*", "*", depth+1, false, n.Values)
	}
	if n.Types&Array != 0 {
		fields(out, path+"[*]", "[*]", depth+1, false, n.Items)
	}
}
