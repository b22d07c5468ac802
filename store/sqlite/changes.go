package sqlite

import "github.com/intakehq/intake"

// Changes moves once a write that announced an operator change has
// committed. One process owns an SQLite database, so no other process's
// change can be missed.
func (s *Store) Changes() intake.Versioned { return &s.changes }

// announce marks the running job's write as an operator change; the
// writer moves the store's counter once the commit holding it returns,
// before the job's caller hears of it.
func (t *wtx) announce() { t.changed = true }
