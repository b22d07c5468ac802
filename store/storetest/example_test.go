package storetest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/store/storetest"
)

// A backend proves it keeps intake's promises by running the one suite
// from its own tests, with a function that opens a fresh, empty store for
// each case. This is store/sqlite's TestConformance.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) intake.Store {
			s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	}
	_ = testConformance
}
