package sqlite

import (
	"context"
	"database/sql"
)

// wtx is the writer's open transaction. Statements the writer runs for
// every message and event are prepared once on the writer's single
// connection (the hot ones when the store opens, any other after its first
// use): parsing SQL would otherwise cost the one writer goroutine more than
// executing it.
type wtx struct {
	*sql.Tx
	s *Store
	// changed: a job announced an operator change (see announce).
	changed bool
}

// prepareOnce prepares queries on the writer's connection unless they
// already are. The writer calls it between transactions (the connection is
// its only one); it serves queries that are many but few in kind, like the
// multi-row inserts of group commits. A query that fails to prepare is left
// to be parsed where it runs, which reports the error.
func (s *Store) prepareOnce(ctx context.Context, queries ...string) {
	for _, q := range queries {
		if s.stmts[q] != nil {
			continue
		}
		if st, err := s.write.PrepareContext(ctx, q); err == nil {
			s.stmts[q] = st // only the writer goroutine touches the map
		}
	}
}

// maxStatements bounds the writer's prepared statements: the hot ones and
// those it learns (see missed), so SQL built with a varying shape cannot
// grow the cache without end.
const maxStatements = 512

// prepared returns the writer's prepared statement for query, or nil;
// a query not yet prepared is noted, and the writer prepares it before
// its next transaction, so any statement it runs again is parsed once.
func (t *wtx) prepared(query string) *sql.Stmt {
	t.s.statements.Add(1)
	s := t.s
	if st := s.stmts[query]; st != nil {
		return st
	}
	if len(s.stmts)+len(s.missed) < maxStatements && !s.unpreparable[query] {
		s.missed[query] = true // only the writer goroutine touches these maps
	}
	return nil
}

// prepareMissed prepares the statements the last transactions ran
// unprepared; the writer calls it between transactions.
func (s *Store) prepareMissed(ctx context.Context) {
	for q := range s.missed {
		delete(s.missed, q)
		s.prepareOnce(ctx, q)
		if s.stmts[q] == nil {
			s.unpreparable[q] = true
		}
	}
}

func (t *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.prepared(query); st != nil {
		return t.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.prepared(query); st != nil {
		return t.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.prepared(query); st != nil {
		return t.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// Savepoints: jobs run one after another, so one name serves them all.
const (
	savepointSQL  = `SAVEPOINT job`
	releaseSQL    = `RELEASE job`
	rollbackToSQL = `ROLLBACK TO job`
)

// hotQueries are prepared at open. A query missing here still works; it
// is parsed on every use.
func hotQueries() []string {
	return []string{
		savepointSQL, releaseSQL, rollbackToSQL,
		insertMessageSQL, insertBodySQL,
		claimMessagesSQL, claimEventsSQL, dueRoutesSQL,
		settlingMessagesSQL, identitiesSQL, subjectsSQL, originalsSQL, consumerLanesSQL,
		putIdentitiesSQL, insertEventsSQL[1], insertRoutesSQL, insertDeliveriesSQL, moveMessagesSQL, recordAttemptsSQL, insertNoticesSQL,
		eventStatesSQL, settlingRoutesSQL, routeCountsSQL, saveRoutesSQL, saveLanesSQL, moveEventsSQL,
	}
}

// prepare readies the hot queries on the writer connection.
func prepare(ctx context.Context, db *sql.DB) (map[string]*sql.Stmt, error) {
	out := map[string]*sql.Stmt{}
	for _, q := range hotQueries() {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			for _, s := range out {
				s.Close()
			}
			return nil, err
		}
		out[q] = st
	}
	return out, nil
}
