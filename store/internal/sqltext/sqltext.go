// Package sqltext writes values into SQL text, for the few lists both
// stores write into their queries literally (so that the planner matches
// their partial indexes), never for what a caller supplies.
package sqltext

import "strings"

// List is vs as a quoted SQL list: 'a', 'b'. The values are intake's own
// names (states), never user input, and hold no quote.
func List[T ~string](vs []T) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		if strings.ContainsRune(string(v), '\'') {
			panic("sqltext: a quote in " + string(v))
		}
		q[i] = "'" + string(v) + "'"
	}
	return strings.Join(q, ", ")
}
