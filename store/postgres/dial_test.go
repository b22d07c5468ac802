package postgres

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestNoTCPConnectWaitsLongerThanTheConnectTimeout: pgx dials a cancel
// request's connection under its own 15 s, and a closing connection holds
// its pool slot until that dial ends; every dial is held to the connect
// timeout instead (connectWait where the URL gives none), so a connect that
// nothing answers gives the slot back as soon as a connection's would.
func TestNoTCPConnectWaitsLongerThanTheConnectTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"the URL's connect_timeout", 2 * time.Second, 2 * time.Second},
		{"none given", 0, connectWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var left time.Duration
			cfg := &pgconn.Config{ConnectTimeout: tc.timeout, DialFunc: func(ctx context.Context, _, _ string) (net.Conn, error) {
				deadline, ok := ctx.Deadline()
				if !ok {
					t.Fatal("a dial with no deadline")
				}
				left = time.Until(deadline)
				return nil, errors.New("nothing answers")
			}}
			boundedClose(cfg)
			// As pgx's asyncClose calls CancelRequest.
			cancelCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if _, err := cfg.DialFunc(cancelCtx, "tcp", "127.0.0.1:5432"); err == nil {
				t.Fatal("the dial's failure was not passed on")
			}
			if left > tc.want || left < tc.want-time.Second {
				t.Fatalf("a cancel request's TCP connect may take %v, want %v", left.Round(time.Millisecond), tc.want)
			}
			// A caller's shorter deadline stays.
			short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, _ = cfg.DialFunc(short, "tcp", "127.0.0.1:5432")
			if left > 100*time.Millisecond {
				t.Fatalf("a dial under a 100ms deadline may take %v", left.Round(time.Millisecond))
			}
		})
	}
}
