package sqlite

import (
	"context"
	"testing"
	"time"
)

// A staff session signed in before people could sign in keeps working
// once the store is migrated: it is a token's session, with no person.
func TestATokensSessionFromBeforePeopleSurvivesTheMigration(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := openFromMigration(t, 24, row{sql: `INSERT INTO console_sessions (id_hash, org_id, key_hash, actor, csrf, created_at, expires_at)
		VALUES (X'01', '', X'02', 'staff', 'csrf', ?, ?)`, args: []any{ts(now), ts(now.Add(time.Hour))}})
	got, err := s.SessionByHash(ctx, []byte{1}, now)
	if err != nil || got.Actor != "staff" || string(got.KeyHash) != "\x02" || got.Subject != "" || got.Email != "" || got.Role != "" {
		t.Fatalf("the old session after the migration = %+v %v", got, err)
	}
}
