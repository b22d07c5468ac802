package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/intakehq/intake/internal/outage"
)

// health is a tracer on every connection that tells the outage watch what
// each statement, batch and connect came to: PostgreSQL unreachable, or an
// answer. A statement PostgreSQL refused is an answer. A wait for a pooled
// connection that runs out of time (every one hangs) is a failure too, but
// a connection handed out is no answer. A connection PostgreSQL ended for
// sitting idle is neither: it is reachable, and the outage that held the
// connection idle was told when it happened.
type health struct{ w *outage.Watch }

func (h health) observe(err error) {
	switch {
	case err == nil:
		h.w.Reached()
	case endedIdle(err):
		// An answer: PostgreSQL ended the connection earlier, while a
		// partition (or a pause of this process) held its transaction idle.
	case unreachable(err):
		h.w.Failed(err)
	}
}

func (h health) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (h health) TraceQueryEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	h.observe(data.Err)
}

func (h health) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (h health) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (h health) TraceBatchEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	h.observe(data.Err)
}

func (h health) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return ctx
}

func (h health) TraceConnectEnd(_ context.Context, data pgx.TraceConnectEndData) {
	h.observe(data.Err)
}

func (h health) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return ctx
}

func (h health) TraceAcquireEnd(_ context.Context, _ *pgxpool.Pool, data pgxpool.TraceAcquireEndData) {
	if data.Err != nil && unreachable(data.Err) {
		h.w.Failed(data.Err)
	}
}
