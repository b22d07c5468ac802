package replica

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/testkit"
)

// Against the S3-compatible server the blob store's tests use (SeaweedFS
// under .ci/run; under CI=true an unreachable one fails the test): a
// synced commit is in a restore, a restore to a time between two batches
// holds the first only, and the replica is marked as the store's.
func TestAReplicaInS3RestoresTheLatestAndAPointInTime(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // Litestream's S3 client cannot use one
	ctx := context.Background()
	u := testkit.S3URL(t, testkit.S3Endpoint(t))
	path := filepath.Join(t.TempDir(), "intake.db")
	db := openDB(t, path)
	r, err := Start(ctx, Options{URL: u, Path: path, StoreID: "store-s3", Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	insert(t, db, "first-1", "first-2")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	between := time.Now()
	// The replica stamps its files with the wall clock in milliseconds.
	for !time.Now().After(between.Add(time.Millisecond)) {
	}
	insert(t, db, "second-1")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(t.TempDir(), "intake.db")
	if err := Restore(ctx, u, latest, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := bodies(t, latest); got != "first-1,first-2,second-1" {
		t.Errorf("latest: %q", got)
	}
	earlier := filepath.Join(t.TempDir(), "intake.db")
	if err := Restore(ctx, u, earlier, between, nil); err != nil {
		t.Fatal(err)
	}
	if got := bodies(t, earlier); got != "first-1,first-2" {
		t.Errorf("to a time between the batches: %q, want the first only", got)
	}
	if id, err := readMark(ctx, u); err != nil || id != "store-s3" {
		t.Errorf("the replica's mark: %q %v", id, err)
	}
	other := filepath.Join(t.TempDir(), "intake.db")
	openDB(t, other)
	if _, err := Start(ctx, Options{URL: u, Path: other, StoreID: "store-other"}); err == nil || !strings.Contains(err.Error(), "holds another store") {
		t.Errorf("another store on the S3 replica: %v, want refused", err)
	}
}

func TestAnUnreachableS3ReplicaIsRefusedAtStart(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	path := filepath.Join(t.TempDir(), "intake.db")
	openDB(t, path)
	_, err := Start(context.Background(), Options{URL: "s3://intake-test/x?region=us-east-1&endpoint=http://127.0.0.1:1", Path: path, StoreID: "s"})
	if err == nil || !strings.Contains(err.Error(), "s3://intake-test/x cannot be reached") {
		t.Fatalf("an unreachable replica: %v, want refused naming it", err)
	}
}

func TestAReplicasURLIsShownWithoutItsCredentialsOrQuery(t *testing.T) {
	if got := Redact("s3://key-id:key-secret@intake-test/x?region=us-east-1&endpoint=http://127.0.0.1:1"); got != "s3://***:***@intake-test/x" {
		t.Fatalf("Redact = %q, want the user and password as *** and no query", got)
	}
}
