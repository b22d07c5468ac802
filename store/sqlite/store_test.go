package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) intake.Store {
		s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
