package ingress

import (
	"context"
	"sync"
	"time"

	"github.com/intakehq/intake"
)

// endpointCacheSize bounds the cache; past it the cache starts over.
const endpointCacheSize = 10000

// endpointCache keeps recently seen endpoints by token hash for a short
// while, so a burst to one endpoint costs one lookup. A change to an
// endpoint (disabled, new limits) takes effect within the TTL, on every
// process. Unknown tokens are never cached: random tokens cannot fill it.
type endpointCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]cachedEndpoint
}

type cachedEndpoint struct {
	ep    intake.Endpoint
	until time.Time
}

func (c *endpointCache) get(ctx context.Context, s intake.Store, hash []byte, now time.Time) (intake.Endpoint, error) {
	key := string(hash)
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.ep, nil
	}
	ep, err := s.EndpointByTokenHash(ctx, hash)
	if err != nil {
		return ep, err
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= endpointCacheSize {
		c.entries = map[string]cachedEndpoint{}
	}
	c.entries[key] = cachedEndpoint{ep: ep, until: now.Add(c.ttl)}
	c.mu.Unlock()
	return ep, nil
}
