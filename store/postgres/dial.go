package postgres

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A broken connection is put away within setupWait and closeWait.
//
// pgx closes a connection that broke mid-statement (its deadline passed, or
// the link reset it) politely: it opens a second connection to send a
// cancel request and waits for the server to hang up on it, then waits for
// the server to hang up the first, each for up to 15 s. The pool gives the
// broken connection's slot back only once that is over. Behind a link that
// takes connections but passes nothing (a TCP proxy whose server is gone, a
// partition that drops packets) every slot can be waiting out those 15 s
// after PostgreSQL is back, and every webhook meanwhile is answered 503. A
// cancel request is a courtesy to a server that may no longer have the
// statement; nothing waits on its answer.
//
// So every connection dialled gets setupWait, from its TCP connect, to be
// set up (TLS included) before pgx speaks PostgreSQL's protocol on it: a
// cancel request's connection is never set up, so that is all it gets. Its
// TCP connect, which pgx would give 15 s where nothing answers it, gets the
// connect timeout, as a connection's does. And the deadline pgx sets to
// close a broken connection is cut to closeWait: a statement's own
// deadlines are never that far ahead (pgx sets one only to end a statement
// at once, to clear that, and to close).
//
// A connection being made holds its slot too, and pgx bounds its handshake
// only by the URL's connect_timeout: without one, connectWait.
const (
	setupWait   = 3 * time.Second
	closeWait   = time.Second
	connectWait = 5 * time.Second
)

// boundedClose gives cfg a connect timeout where it has none
// (connectWait), and wraps its dial so that no TCP connect waits longer
// than that and each connection it makes puts itself away in time once pgx
// gives up on it.
func boundedClose(cfg *pgconn.Config) {
	if cfg.ConnectTimeout <= 0 {
		// A connection is made in the pool's slot, and nothing else ends a
		// connect whose server stopped answering mid-handshake: without a
		// bound, such connects hold every slot long after the link is back.
		cfg.ConnectTimeout = connectWait
	}
	dial, after, connect := cfg.DialFunc, cfg.AfterNetConnect, cfg.ConnectTimeout
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, connect)
		defer cancel()
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		_ = c.SetDeadline(time.Now().Add(setupWait))
		return &closingConn{Conn: c}, nil
	}
	cfg.AfterNetConnect = func(ctx context.Context, cfg *pgconn.Config, c net.Conn) (net.Conn, error) {
		raw := c
		if t, ok := c.(*tls.Conn); ok {
			raw = t.NetConn()
		}
		if cc, ok := raw.(*closingConn); ok {
			// Set up: from here on its statements' contexts bound it.
			if err := cc.Conn.SetDeadline(time.Time{}); err != nil {
				return nil, err
			}
		}
		if after != nil {
			return after(ctx, cfg, c)
		}
		return c, nil
	}
}

// closingConn is a connection whose closing deadline is cut to closeWait.
type closingConn struct{ net.Conn }

func (c *closingConn) SetDeadline(t time.Time) error {
	if limit := time.Now().Add(closeWait); t.After(limit) {
		t = limit
	}
	return c.Conn.SetDeadline(t)
}
