package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// listen keeps a dedicated connection LISTENing on every topic's channel and
// wakes this process's listeners when another process commits work. Losing
// the connection costs only latency (workers also poll), so it reconnects
// with a backoff, and wakes every topic once listening again since
// notifications sent meanwhile are lost.
func (s *Store) listen(ctx context.Context) {
	defer close(s.listenDone)
	wait := 100 * time.Millisecond
	for {
		listening, err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if listening {
			wait = 100 * time.Millisecond
		}
		// A lost or refused connection is PostgreSQL unreachable (stopped,
		// failed over, not yet promoted): the outage is logged once, and
		// each reconnect that fails while it lasts is held back with it.
		if err = classify(err); intake.ErrorCode(err) == intake.EUNAVAILABLE && s.outage != nil {
			s.outage.Failed(err)
		}
		s.log.Warn("postgres: notification listener lost its connection; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// listenOnce listens on one connection until it fails; listening reports
// whether it got as far as LISTEN.
func (s *Store) listenOnce(ctx context.Context) (listening bool, err error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// Taken out of the pool: it is busy for as long as the store is open.
	conn := pc.Hijack()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(closeCtx)
	}()
	topics := make(map[string]string, len(channels))
	for topic, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return false, err
		}
		topics[ch] = topic
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{changesChannel}.Sanitize()); err != nil {
		return false, err
	}
	for topic := range channels {
		s.hub.Notify(topic)
	}
	// Changes other processes made while nothing listened went unheard.
	s.changes.Move()
	s.heard.Do(func() { close(s.listening) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if n.Payload == s.instance {
			continue // this process's own commit; the hub already woke it
		}
		if n.Channel == changesChannel {
			s.changes.Move()
			continue
		}
		if topic, ok := topics[n.Channel]; ok {
			s.hub.Notify(topic)
		}
	}
}
