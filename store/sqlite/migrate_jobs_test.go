package sqlite

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

// A window replay recorded before bulk jobs existed reads, after the
// migration, as a window replay with its window and progress.
func TestAWindowReplayFromBeforeBulkJobsSurvivesTheMigration(t *testing.T) {
	id, org, ep := intake.NewID(), intake.NewID(), intake.NewID()
	s := openFromMigration(t, 33, row{`INSERT INTO replay_jobs (id, org_id, endpoint_id, since, until, total, done, cursor, created_at, updated_at)
		VALUES (?, ?, ?, 1000, 2000, 5, 2, 'c', 1000, 1500)`, []any{id, org, ep}})
	j, err := s.ReplayJob(context.Background(), intake.Scope{OrgID: org}, id)
	if err != nil || j.Kind != intake.JobWindow || j.EndpointID != ep || j.Since.IsZero() || j.Total != 5 || j.Done != 2 || j.Cursor != "c" {
		t.Fatalf("job = %+v, %v", j, err)
	}
}
