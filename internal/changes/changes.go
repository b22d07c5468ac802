// Package changes counts operator changes for the caches of a process.
package changes

import "sync/atomic"

// Counter lets every cache of a process see an operator's change on the
// very next request: an endpoint disabled or deleted, a connection's
// secrets rotated, its settings changed or the connection deleted, a key
// revoked, a consumer updated or deleted. The store moves it once such a
// write has committed and before the write returns, and again whenever it hears (or may have
// missed) that another process made one. A cache tags what it loads with
// the version it saw before loading and uses an entry only while the
// version is unchanged: one atomic load per lookup.
type Counter struct{ n atomic.Uint64 }

// Version is the current count; it only grows.
func (c *Counter) Version() uint64 { return c.n.Load() }

// Move records a change: whatever was loaded before it may be stale.
func (c *Counter) Move() { c.n.Add(1) }
