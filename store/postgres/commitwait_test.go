package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/faults"
	"github.com/intakehq/intake/internal/outage"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestIngestAnswersUnavailableWhenACommitHangsAndTheCommitGoesOn cuts the
// link to PostgreSQL without resetting it (a partition: nothing arrives,
// nothing fails): an ingest answers unavailable once the commit wait is
// past, rather than hang for as long as the partition lasts, and the
// outage watch hears of it. When the partition heals, ingests commit
// again, the provider's retry of the webhook answered unavailable among
// them.
func TestIngestAnswersUnavailableWhenACommitHangsAndTheCommitGoesOn(t *testing.T) {
	ctx := context.Background()
	db, proxy := faults.ProxiedURL(t, pgtest.Database(t))
	watch := outage.New("postgres", slog.New(slog.DiscardHandler), intake.SystemClock{})
	const wait = 300 * time.Millisecond
	s := openWith(t, Options{URL: db, MaxConns: 4, CommitWait: wait, Outage: watch})
	o := newOrg(t, s, "acme")
	if err := s.Ingest(ctx, o.message(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}

	partition, _ := faults.Find("partition both ways")
	if err := proxy.Apply(partition); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Clear) // before the store closes: its committers wait on the link
	held := o.message(`{"n":1}`)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Ingest(ctx, held) }()
	select {
	case err := <-done:
		if intake.ErrorCode(err) != intake.EUNAVAILABLE {
			t.Fatalf("an ingest through a partition returned %v after %v, want unavailable", err, time.Since(start))
		}
	case <-time.After(20 * wait):
		t.Fatalf("an ingest through a partition had not returned after %v; the commit wait is %v", 20*wait, wait)
	}
	if !watch.Down() {
		t.Error("the outage watch did not hear of the commit that did not return")
	}

	proxy.Clear()
	// Each retry is a request of its own, as a provider's is: a message
	// with an id of its own (one answered unavailable may still commit,
	// its commit going on once the link is back).
	deadline := time.Now().Add(30 * time.Second)
	retry := o.message(`{"n":1}`)
	for err := s.Ingest(ctx, retry); err != nil; err = s.Ingest(ctx, retry) {
		if time.Now().After(deadline) {
			t.Fatalf("ingests did not commit again once the partition healed: %v", err)
		}
		retry = o.message(`{"n":1}`)
	}
	next := o.message(`{"n":2}`)
	if err := s.Ingest(ctx, next); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{retry.ID, next.ID} {
		if _, err := s.Message(ctx, intake.Scope{}, id); err != nil {
			t.Errorf("message %s not stored after the partition healed: %v", id, err)
		}
	}
	// Commits go on; one at least outage.Quiet after the last failure ends
	// the outage.
	for n := 3; watch.Down(); n++ {
		if time.Now().After(deadline) {
			t.Fatal("the outage watch still holds PostgreSQL down after commits went through")
		}
		if err := s.Ingest(ctx, o.message(fmt.Sprintf(`{"n":%d}`, n))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAWaitForAPooledConnectionThatRunsOutOfTimeIsAnOutage: when every
// pooled connection hangs, a statement waits for one until its deadline
// and never reaches PostgreSQL; the outage watch hears of it all the same,
// before the caller logs its failure, so that line is held back as one of
// the outage's.
func TestAWaitForAPooledConnectionThatRunsOutOfTimeIsAnOutage(t *testing.T) {
	ctx := context.Background()
	watch := outage.New("postgres", slog.New(slog.DiscardHandler), intake.SystemClock{})
	s := openWith(t, Options{URL: pgtest.Database(t), MaxConns: 1, Outage: watch})
	busy, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Release()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.Message(short, intake.Scope{}, intake.NewID()); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("a read that found no connection in time returned %v, want unavailable", err)
	}
	if !watch.Down() {
		t.Error("the outage watch did not hear of the wait for a connection that ran out of time")
	}
}

// TestBrokenConnectionsGiveTheirSlotsBackSoonAfterTheLinkHeals: a TCP
// proxy whose server went away takes every byte of the connections it has
// and passes none, while new connections reach the server (a failover
// behind the proxy). The pool's one connection breaks mid-commit; pgx
// closes it with a cancel request, itself swallowed, and would wait 15 s for
// the server to hang up before the pool had the slot back. Ingests commit
// again within a few seconds, not after those 15 s.
func TestBrokenConnectionsGiveTheirSlotsBackSoonAfterTheLinkHeals(t *testing.T) {
	ctx := context.Background()
	s, proxy, o := behindSwallowingProxy(t)
	if err := s.Ingest(ctx, o.message(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}
	proxy.swallow(true)
	if err := s.Ingest(ctx, o.message(`{"lost":0}`)); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("an ingest through a link that passes nothing returned %v, want unavailable", err)
	}
	// The commit's deadline passes and pgx closes the connection, its
	// cancel request swallowed too.
	// (testkit.WaitFor would do, but testkit imports this package.)
	for deadline := time.Now().Add(10 * time.Second); proxy.cancels.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("pgx sent no cancel request for the broken connection")
		}
	}
	proxy.swallow(false) // new connections reach the server; the old stay swallowed
	commitsAgainWithin(t, s, o, 10*time.Second, "a broken connection holds the pool's slot")
}

// TestAConnectWhoseServerStopsAnsweringGivesItsSlotBack: a connection
// being made when the link starts swallowing hangs in its handshake, in the
// pool's only slot. It gives up within the connect timeout, so ingests
// commit again once new connections reach the server.
func TestAConnectWhoseServerStopsAnsweringGivesItsSlotBack(t *testing.T) {
	ctx := context.Background()
	s, proxy, o := behindSwallowingProxy(t)
	s.pool.Reset() // the next ingest connects anew
	proxy.swallow(true)
	if err := s.Ingest(ctx, o.message(`{"lost":0}`)); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("an ingest through a link that passes nothing returned %v, want unavailable", err)
	}
	proxy.swallow(false)
	commitsAgainWithin(t, s, o, 2*connectWait, "a connect left hanging holds the pool's slot")
}

// behindSwallowingProxy opens a store with a pool of one connection, and a
// commit wait of 300 ms, through a swallowingProxy to the test's database.
func behindSwallowingProxy(t *testing.T) (*Store, *swallowingProxy, org) {
	t.Helper()
	target, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newSwallowingProxy(t, target.Host)
	target.Host = proxy.addr
	s := openWith(t, Options{URL: target.String(), MaxConns: 1, CommitWait: 300 * time.Millisecond})
	return s, proxy, newOrg(t, s, "acme")
}

// commitsAgainWithin ingests until one commits, failing the test with why
// if none has within limit.
func commitsAgainWithin(t *testing.T, s *Store, o org, limit time.Duration, why string) {
	t.Helper()
	healed := time.Now()
	for n := 1; ; n++ {
		err := s.Ingest(context.Background(), o.message(fmt.Sprintf(`{"n":%d}`, n)))
		if err == nil {
			t.Logf("an ingest committed %v after new connections reached the server again", time.Since(healed).Round(time.Millisecond))
			return
		}
		if time.Since(healed) > limit {
			t.Fatalf("ingests still fail %v after new connections reach the server again (%v): %s",
				time.Since(healed).Round(time.Millisecond), err, why)
		}
	}
}

// TestAStatementLongerThanACloseRunsToItsEnd: the bound on closing a
// broken connection is no bound on a statement that is merely slow.
func TestAStatementLongerThanACloseRunsToItsEnd(t *testing.T) {
	s := openWith(t, Options{URL: pgtest.Database(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `SELECT pg_sleep($1)`, (closeWait + setupWait).Seconds()); err != nil {
		t.Fatalf("a statement longer than a broken connection's close was cut short: %v", err)
	}
}

// swallowingProxy forwards TCP connections to a server; a connection made
// while it swallows, and every connection open when it starts to, has its
// bytes taken and dropped both ways from then on, and is never closed.
type swallowingProxy struct {
	addr string
	// cancels counts the connections that opened with a cancel request.
	cancels atomic.Int32
	mu      sync.Mutex
	on      bool
	open    []*swallowed
}

type swallowed struct{ dropped atomic.Bool }

func newSwallowingProxy(t *testing.T, server string) *swallowingProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &swallowingProxy{addr: l.Addr().String()}
	var conns []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			sw := &swallowed{}
			p.mu.Lock()
			sw.dropped.Store(p.on)
			p.open = append(p.open, sw)
			p.mu.Unlock()
			upstream, err := net.Dial("tcp", server)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, upstream)
			mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for first := src == client; ; first = false {
					n, err := src.Read(buf)
					if first && n >= 8 && binary.BigEndian.Uint32(buf[4:8]) == 80877102 {
						p.cancels.Add(1)
					}
					if err != nil {
						if !sw.dropped.Load() {
							dst.Close()
						}
						return
					}
					if !sw.dropped.Load() {
						dst.Write(buf[:n])
					}
				}
			}
			go pipe(upstream, client)
			go pipe(client, upstream)
		}
	}()
	return p
}

// swallow starts (on) or ends swallowing: starting it swallows every open
// connection too; ending it leaves those swallowed.
func (p *swallowingProxy) swallow(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = on
	if on {
		for _, sw := range p.open {
			sw.dropped.Store(true)
		}
	}
}
