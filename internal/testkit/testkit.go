// Package testkit is what intake's tests share: a clock they move by hand,
// a store of each backend on a fresh database, and a TCP proxy that can
// cut a store off from its server.
package testkit

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit/clock"
	"github.com/intakehq/intake/rules"
	"github.com/intakehq/intake/store/postgres"
	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/store/sqlite"
)

// Clock is an intake.Clock that moves only when a test says so: the one
// of package clock.
type Clock = clock.Clock

// Stores opens a fresh store of each kind, by name, for a test that runs
// on both: t.Run(name, …) over it.
var Stores = map[string]func(testing.TB) intake.Store{
	"sqlite":   func(t testing.TB) intake.Store { return SQLite(t) },
	"postgres": func(t testing.TB) intake.Store { return Postgres(t) },
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return clock.New(t) }

// SQLite opens the embedded store on a fresh file, closed when the test
// ends.
func SQLite(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Postgres opens the PostgreSQL store on a fresh database (pgtest: it
// fails under CI=true when the server cannot be reached), closed when the
// test ends.
func Postgres(t testing.TB) *postgres.Store {
	t.Helper()
	return PostgresAt(t, pgtest.Database(t))
}

// PostgresAt opens the PostgreSQL store at url, closed when the test ends.
// Its leases are timed by the clock each call passes, as tests step it.
func PostgresAt(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Options{URL: url, CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Proxy forwards TCP connections from its own address to a target, and
// can be cut (every connection closed, new ones refused) and restored on
// the same address: a database server that went away and came back.
type Proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to target, stopped when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.Cut(); p.wg.Wait() })
	return p
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, up) {
				continue
			}
			p.wg.Go(func() { io.Copy(up, c); up.Close() })
			p.wg.Go(func() { io.Copy(c, up); c.Close() })
		}
	})
}

// track records a proxied pair, or closes it if the proxy was cut
// meanwhile.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// Cut closes every proxied connection and stops accepting new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Restore accepts connections again on the same address.
func (p *Proxy) Restore(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// Rules is a rules engine for tests: the default bounds, but a time limit
// generous enough for a loaded machine and the race detector, where
// starting a JavaScript VM alone can take tens of milliseconds. Tests of
// the limits build their own.
func Rules(t testing.TB) *rules.Engine {
	t.Helper()
	e, err := rules.New(rules.Config{ScriptTimeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// Sealer is a sealer under a fresh random key, as a server's master key
// makes one.
func Sealer(t testing.TB) *seal.Sealer {
	t.Helper()
	key := make([]byte, seal.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// WaitFor polls cond until it holds, for what runs on goroutines of its
// own, failing the test naming what once a hang guard's deadline passes.
// The guard is as long as the longest of the copies it replaced (the
// router's): on a loaded machine under the race detector only a hang
// should trip it.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60s", what)
		}
	}
}

// Receive returns the next value of ch, failing the test naming what if
// none comes before the same hang guard as WaitFor's.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: not within 60s", what)
		panic("unreachable")
	}
}
