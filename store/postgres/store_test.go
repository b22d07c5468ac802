package postgres

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/store/storetest"
)

// open opens a store on a fresh database, closed when the test ends.
func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URL: pgtest.Database(t), MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) intake.Store { return open(t) })
}
