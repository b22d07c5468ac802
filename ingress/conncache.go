package ingress

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/provider"
)

// connTTL bounds how long a rotated secret can go unseen by handshakes.
const connTTL = 5 * time.Second

// connCache keeps recently opened connection secrets and configs for the
// handshakes answered at ingress, so a burst of them costs one lookup.
type connCache struct {
	mu      sync.Mutex
	entries map[string]connEntry
}

type connEntry struct {
	secrets [][]byte
	cfg     provider.Config
	until   time.Time
}

func (c *connCache) get(ctx context.Context, s intake.Store, sealer *seal.Sealer, id string, now time.Time) ([][]byte, provider.Config, error) {
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.secrets, e.cfg, nil
	}
	conn, err := s.Connection(ctx, intake.Scope{}, id)
	if err != nil {
		return nil, provider.Config{}, err
	}
	cfg, err := provider.ParseConfig(conn.Config)
	if err != nil {
		return nil, provider.Config{}, err
	}
	var secrets [][]byte
	if len(conn.SealedSecrets) > 0 {
		if sealer == nil {
			return nil, cfg, errors.New("no sealer to open connection secrets")
		}
		if secrets, err = sealer.OpenSecrets(conn.SealedSecrets, []byte(conn.ID)); err != nil {
			return nil, cfg, err
		}
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]connEntry{}
	}
	c.entries[id] = connEntry{secrets: secrets, cfg: cfg, until: now.Add(connTTL)}
	c.mu.Unlock()
	return secrets, cfg, nil
}
