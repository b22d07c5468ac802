package ingress

import (
	"context"
	"errors"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/provider"
)

// connTTL bounds how long a rotated secret could go unseen by handshakes
// if a change notification were lost.
const connTTL = 5 * time.Second

// endpoint finds the endpoint a token addresses. Found endpoints are cached
// briefly, and dropped as soon as the store's change counter moves;
// unknown tokens never are, so random tokens cannot fill the cache. A token
// a rotation replaced is judged at now, cached or not: its overlap ends
// without any change to void the cache.
func (h *Handler) endpoint(ctx context.Context, hash []byte, now time.Time) (intake.Endpoint, error) {
	ep, err := h.eps.Get(string(hash), now, func() (intake.Endpoint, error) {
		ctx, cancel := context.WithTimeout(ctx, h.cfg.StoreWait)
		defer cancel()
		return h.cfg.Store.EndpointByTokenHash(ctx, hash)
	})
	if err == nil && !ep.AddressedBy(hash, now) {
		return intake.Endpoint{}, intake.Errorf(intake.ENOTFOUND, "no endpoint has this token")
	}
	return ep, err
}

// connSecrets are a connection's opened secrets and config, for the
// handshakes answered at ingress.
type connSecrets struct {
	secrets [][]byte
	cfg     provider.Config
}

func (h *Handler) connection(ctx context.Context, id string, now time.Time) (connSecrets, error) {
	return h.conns.Get(id, now, func() (connSecrets, error) {
		ctx, cancel := context.WithTimeout(ctx, h.cfg.StoreWait)
		defer cancel()
		conn, err := h.cfg.Store.Connection(ctx, intake.Scope{}, id)
		if err != nil {
			return connSecrets{}, err
		}
		return openConnection(h.cfg.Sealer, conn)
	})
}

func openConnection(sealer *seal.Sealer, conn intake.Connection) (connSecrets, error) {
	cfg, err := provider.ParseConfig(conn.Config)
	if err != nil {
		return connSecrets{}, err
	}
	out := connSecrets{cfg: cfg}
	if len(conn.SealedSecrets) > 0 {
		if sealer == nil {
			return out, errors.New("no sealer to open connection secrets")
		}
		if out.secrets, err = sealer.ConnectionSecrets(conn); err != nil {
			return out, err
		}
	}
	return out, nil
}
