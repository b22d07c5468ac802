// Package keyset pages the lists both stores read newest first, by id.
package keyset

import "github.com/intakehq/intake"

// Keyed is a row of a keyset-paginated list: its id orders the list.
type Keyed interface{ Key() string }

// Page makes a page of items read newest first with one row more
// than limit: that extra row, when present, says there is a next page,
// which starts after the last item kept.
func Page[T Keyed](items []T, limit int) intake.Page[T] {
	p := intake.Page[T]{Items: items}
	if len(items) > limit {
		p.Items = items[:limit]
		p.NextCursor = items[limit-1].Key()
	}
	return p
}
