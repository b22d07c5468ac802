package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a transaction on one connection whose statements travel in
// batches: BEGIN rides with the first batch and COMMIT with the last, so
// a transaction that reads once, decides in Go, then writes costs two
// round trips.
type pipeTx struct {
	conn *pgxpool.Conn
	b    *pgx.Batch
	// changed: a statement announced an operator change.
	changed bool
}

// pipeline runs fn as one transaction (re-run when PostgreSQL refuses it
// for a reason a second try can pass). fn queues statements on p.b and
// sends them with p.flush; what it leaves queued is sent with the COMMIT.
func (s *Store) pipeline(ctx context.Context, fn func(p *pipeTx) error) error {
	for try := 1; ; try++ {
		err := s.runPipeline(ctx, fn)
		if err == nil {
			s.foreground.Add(1)
		}
		if err == nil || try == retries || !retryable(err) || ctx.Err() != nil {
			return classify(err)
		}
	}
}

func (s *Store) runPipeline(ctx context.Context, fn func(p *pipeTx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	p := &pipeTx{conn: conn, b: &pgx.Batch{}}
	p.b.Queue(`BEGIN`)
	err = fn(p)
	if err == nil {
		p.b.Queue(`COMMIT`)
		err = p.flush(ctx)
	}
	if p.changed {
		// Even after a failed commit: whether it landed is unknown.
		s.changes.Move()
	}
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		// A connection left inside a transaction is closed on release;
		// rolling back keeps it.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
	}
	return err
}

// flush sends what is queued, in one round trip, and runs its callbacks.
func (p *pipeTx) flush(ctx context.Context) error {
	if p.b.Len() == 0 {
		return nil
	}
	b := p.b
	p.b = &pgx.Batch{}
	return p.conn.SendBatch(ctx, b).Close()
}
