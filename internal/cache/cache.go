// Package cache keeps recently loaded values for a short time, so a burst
// of work about one endpoint, connection or org costs one store read. An
// operator's change is seen at once through the store's change counter
// (intake.ChangeFeed); the TTL only bounds what a missed notification could
// leave stale.
package cache

import (
	"sync"
	"time"

	"github.com/intakehq/intake"
)

// TTL is a bounded map whose entries expire; errors are never cached.
type TTL[K comparable, V any] struct {
	TTL time.Duration
	Max int // entries kept at most (default 10000); past it the cache starts over
	// Changes, when set, voids every entry loaded before it last moved.
	Changes intake.Versioned

	mu      sync.Mutex
	entries map[K]entry[V]
	version uint64 // of the entries kept: older ones are dropped on sight
}

type entry[V any] struct {
	v       V
	until   time.Time
	version uint64
}

// Get returns the cached value of key, or loads, caches and returns it.
func (c *TTL[K, V]) Get(key K, now time.Time, load func() (V, error)) (V, error) {
	version := c.current()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && e.version == version && now.Before(e.until) {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current() != version {
		// A change committed while this loaded: the value may predate it,
		// so it serves this caller only.
		return v, nil
	}
	max := c.Max
	if max == 0 {
		max = 10000
	}
	if c.entries == nil || len(c.entries) >= max || c.version != version {
		c.entries, c.version = map[K]entry[V]{}, version
	}
	c.entries[key] = entry[V]{v: v, until: now.Add(c.TTL), version: version}
	return v, nil
}

func (c *TTL[K, V]) current() uint64 {
	if c.Changes == nil {
		return 0
	}
	return c.Changes.Version()
}
