package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTwoProcessesStartingOnAnEmptyDatabaseBothServe starts two processes
// at the same moment on a database with no tables: one migrates, the other
// waits for the migration lock, and both serve.
func TestTwoProcessesStartingOnAnEmptyDatabaseBothServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	procs, db := onePostgres(t, 2)
	a, b := procs[0], procs[1]
	for _, s := range []*server{a, b} {
		resp, err := http.Get(s.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("readyz %d", resp.StatusCode)
		}
	}
	var org struct{ ID string }
	a.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	var orgs struct{ Items []struct{ ID string } }
	b.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	if len(orgs.Items) != 1 || orgs.Items[0].ID != org.ID {
		t.Fatalf("b lists %+v, want the org a created", orgs.Items)
	}
	versions := migrationVersions(t, db)
	for v, n := range versions {
		if n != 1 {
			t.Errorf("migration %d applied %d times", v, n)
		}
	}
	if len(versions) == 0 {
		t.Error("no migration recorded")
	}
}

// migrationVersions counts goose's records of each applied migration.
func migrationVersions(t *testing.T, db string) map[int64]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var v int64
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		out[v] = n
	}
	return out
}
