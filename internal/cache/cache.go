// Package cache keeps recently loaded values for a short time, so a burst
// of work about one endpoint, connection or org costs one store read. A
// change in the store is seen once the TTL has passed, on every process.
package cache

import (
	"sync"
	"time"
)

// TTL is a bounded map whose entries expire; errors are never cached.
type TTL[K comparable, V any] struct {
	TTL time.Duration
	Max int // entries kept at most (default 10000); past it the cache starts over

	mu      sync.Mutex
	entries map[K]entry[V]
}

type entry[V any] struct {
	v     V
	until time.Time
}

// Get returns the cached value of key, or loads, caches and returns it.
func (c *TTL[K, V]) Get(key K, now time.Time, load func() (V, error)) (V, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	max := c.Max
	if max == 0 {
		max = 10000
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= max {
		c.entries = map[K]entry[V]{}
	}
	c.entries[key] = entry[V]{v: v, until: now.Add(c.TTL)}
	c.mu.Unlock()
	return v, nil
}
