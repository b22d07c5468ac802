// Package pgtest gives tests a fresh PostgreSQL database of their own. The
// server is named by INTAKE_TEST_POSTGRES (default: the local one, user
// postgres); when it cannot be reached, tests skip, unless CI=true, where
// they fail: CI must never pass by skipping.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake/internal/redact"
)

// DefaultURL is the server used when INTAKE_TEST_POSTGRES is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL is the URL of the server tests create their databases on.
func ServerURL() string {
	if u := os.Getenv("INTAKE_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultURL
}

// Database creates an empty database intake_test_<random> and returns its
// URL; it is dropped (with any connections still open) when the test ends.
func Database(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		unreachable(t, err)
	}
	defer admin.Close(context.Background())
	name := "intake_test_" + strings.ToLower(rand.Text()[:16])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatalf("pgtest: INTAKE_TEST_POSTGRES: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func unreachable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: PostgreSQL at %s is unreachable and CI=true, so this fails rather than skips: %v", redacted(), err)
	}
	t.Skipf("pgtest: PostgreSQL at %s is unreachable (set INTAKE_TEST_POSTGRES, or start it); skipping: %v", redacted(), err)
}

// redacted is the server URL without its credentials, for messages.
func redacted() string { return redact.URL(ServerURL()) }
