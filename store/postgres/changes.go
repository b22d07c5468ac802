package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// changesChannel carries operator changes between the processes sharing
// the database; its payload is the writing store's instance.
const changesChannel = "intake_changes"

// Changes moves once this process committed an operator change, when
// another process's change notification arrives, and when the listener
// (re)connects, since notifications sent while it was away are lost.
func (s *Store) Changes() intake.Versioned { return &s.changes }

// changeTx is a transaction that knows whether it announced a change, so
// runTx can move the counter once it committed.
type changeTx struct {
	pgx.Tx
	changed bool
}

// announce notifies every process, with the commit of tx, that an operator
// change is in it; this process's counter moves once tx commits. tx is
// the one runTx handed to its function.
func (s *Store) announce(ctx context.Context, tx pgx.Tx) error {
	tx.(*changeTx).changed = true
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, changesChannel, s.instance)
	return err
}
