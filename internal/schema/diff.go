package schema

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kinds of change.
const (
	Added       = "added"        // a field never seen there before
	Removed     = "removed"      // a field every earlier value had is missing
	TypeChanged = "type_changed" // a value of a type never seen there before
)

// Change is one way a value's shape departs from the schema of the values
// seen before it.
type Change struct {
	// Path is where, as JSONPath: $ is the value, .name or ['odd name'] a
	// property, [*] every item of an array, .* every value of a map.
	Path string
	Kind string
	// From is the types seen there before (removed, type_changed); To the
	// value's types there (added, type_changed).
	From, To Type
}

// Diff lists how sample, the schema of one new value (or of several,
// merged), departs from base, the schema of the values seen before: fields
// base never had (added), fields present in every value before that sample
// lacks (removed), and types base never saw at a place (type_changed). A
// nil base has seen nothing, so nothing is drift. Formats are not shape: a
// string that no longer matches a format is no change. Merging sample into
// base makes the schema Diff has nothing to say about again.
func Diff(base, sample *Node) []Change {
	var out []Change
	diff("$", base, sample, &out)
	slices.SortFunc(out, func(a, b Change) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return slices.CompactFunc(out, func(a, b Change) bool { return a.Path == b.Path && a.Kind == b.Kind })
}

func diff(path string, base, sample *Node, out *[]Change) {
	if base == nil || sample == nil || base.Types == 0 || sample.Types == 0 {
		return // nothing seen, or anything goes
	}
	if !base.Types.accepts(sample.Types) {
		*out = append(*out, Change{Path: path, Kind: TypeChanged, From: base.Types, To: sample.Types})
	}
	if base.Types&Object != 0 && sample.Types&Object != 0 {
		switch {
		case base.Values != nil:
			for _, k := range slices.Sorted(maps.Keys(sample.Properties)) {
				diff(path+".*", base.Values, sample.Properties[k], out)
			}
			diff(path+".*", base.Values, sample.Values, out)
		case sample.Values == nil:
			for _, k := range slices.Sorted(maps.Keys(sample.Properties)) {
				p, seen := base.Properties[k]
				if !seen {
					*out = append(*out, Change{Path: Child(path, k), Kind: Added, To: sample.Properties[k].Types})
					continue
				}
				diff(Child(path, k), p, sample.Properties[k], out)
			}
			for _, k := range base.Required {
				if p := base.Properties[k]; p != nil && !slices.Contains(sample.Required, k) {
					*out = append(*out, Change{Path: Child(path, k), Kind: Removed, From: p.Types})
				}
			}
		}
	}
	if base.Types&Array != 0 && sample.Types&Array != 0 {
		diff(path+"[*]", base.Items, sample.Items, out)
	}
}

var plainName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// Child is the JSONPath of property name of the value at path.
func Child(path, name string) string {
	if plainName.MatchString(name) {
		return path + "." + name
	}
	q := strconv.Quote(name)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return path + "['" + strings.ReplaceAll(q, "'", `\'`) + "']"
}
