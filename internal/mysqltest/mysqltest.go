// Package mysqltest gives tests a fresh MySQL/MariaDB database of their
// own. The server is named by INTAKE_TEST_MYSQL, a go-sql-driver DSN
// (default: the local one, user root, no password); when it cannot be
// reached, tests skip, unless CI=true, where they fail: CI must never pass
// by skipping.
package mysqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultDSN is the server used when INTAKE_TEST_MYSQL is unset.
const DefaultDSN = "root@tcp(127.0.0.1:3306)/"

// ServerDSN is the DSN of the server tests create their databases on.
func ServerDSN() string {
	if d := os.Getenv("INTAKE_TEST_MYSQL"); d != "" {
		return d
	}
	return DefaultDSN
}

// Database creates an empty database intake_test_<random> and returns its
// DSN; it is dropped when the test ends.
func Database(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(ServerDSN())
	if err != nil {
		t.Fatalf("mysqltest: INTAKE_TEST_MYSQL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	defer admin.Close()
	if err := admin.PingContext(ctx); err != nil {
		unreachable(t, cfg, err)
	}
	name := "intake_test_" + strings.ToLower(rand.Text()[:16])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("mysqltest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Errorf("mysqltest: drop %s: %v", name, err)
			return
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("mysqltest: drop %s: %v", name, err)
		}
	})
	db := cfg.Clone()
	db.DBName = name
	return db.FormatDSN()
}

func unreachable(t testing.TB, cfg *mysql.Config, err error) {
	t.Helper()
	where := cfg.Net + "(" + cfg.Addr + ")"
	if os.Getenv("CI") == "true" {
		t.Fatalf("mysqltest: MySQL at %s is unreachable and CI=true, so this fails rather than skips: %v", where, err)
	}
	t.Skipf("mysqltest: MySQL at %s is unreachable (set INTAKE_TEST_MYSQL, or start it); skipping: %v", where, err)
}
