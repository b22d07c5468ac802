package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake/internal/redact"
)

// freshDatabase creates an empty database intake_bench_<random> on the
// PostgreSQL server at server and returns its URL, so every run starts from
// nothing and never touches a database someone else uses. drop removes it,
// with any connection still open.
func freshDatabase(ctx context.Context, server string) (dbURL string, drop func() error, err error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("--db %q: want a postgres:// URL of the server", server)
	}
	name := "intake_bench_" + strings.ToLower(rand.Text()[:16])
	if err := adminExec(ctx, server, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("creating the bench database on %s: %w", redact.URL(server), err)
	}
	u.Path = "/" + name
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return adminExec(ctx, server, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

func adminExec(ctx context.Context, server, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}
