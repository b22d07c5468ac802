package postgres

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Leader is this process's hold on a named job (a retention sweep, an
// alarm) that must run in one process at a time: a session advisory lock
// on a connection of its own. PostgreSQL releases the lock when that
// session ends, so a process that dies or loses its connection stops
// leading and another can take over.
type Leader struct {
	conn *pgx.Conn
	mu   sync.Mutex // conn is used by the health check and Release
	lost chan struct{}
	once sync.Once
}

// leaderCheck is how often a leader checks that its session, and so its
// lock, is still alive.
const leaderCheck = time.Second

// TryLead takes the lock named name if no other session holds it. It
// returns nil and no error when another process leads.
func (s *Store) TryLead(ctx context.Context, name string) (*Leader, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, classify(err)
	}
	var locked bool
	if err := pc.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, leaderKey(name)).Scan(&locked); err != nil || !locked {
		pc.Release() // holding no lock, it can serve others
		return nil, classify(err)
	}
	// The lock lives as long as this session: take it out of the pool.
	l := &Leader{conn: pc.Hijack(), lost: make(chan struct{})}
	go l.watch()
	return l, nil
}

// Lost is closed once the lock is no longer held: after Release, or when
// its session failed.
func (l *Leader) Lost() <-chan struct{} { return l.lost }

// Release gives the lock up by ending its session.
func (l *Leader) Release() {
	l.end()
}

func (l *Leader) end() {
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		l.conn.Close(ctx)
		close(l.lost)
	})
}

func (l *Leader) watch() {
	t := time.NewTicker(leaderCheck)
	defer t.Stop()
	for {
		select {
		case <-l.lost:
			return
		case <-t.C:
		}
		l.mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), leaderCheck)
		err := l.conn.Ping(ctx)
		cancel()
		l.mu.Unlock()
		if err != nil {
			l.end()
			return
		}
	}
}

// Lead runs fn whenever this process holds name's lock, until ctx ends. It
// tries for the lock every interval; fn's context ends when the lock is
// lost, and once fn returns the lock is given up and tried for again.
func (s *Store) Lead(ctx context.Context, name string, interval time.Duration, fn func(context.Context)) {
	for {
		l, err := s.TryLead(ctx, name)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("postgres: could not try for leadership", "job", name, "err", err)
		}
		if err == nil && l != nil {
			leadCtx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-l.Lost():
					cancel()
				case <-leadCtx.Done():
				}
			}()
			fn(leadCtx)
			cancel()
			l.Release()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// leaderKey maps a job's name to its advisory lock key.
func leaderKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("intake:leader:" + name))
	return int64(h.Sum64())
}
