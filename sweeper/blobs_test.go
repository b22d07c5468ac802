package sweeper_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/sweeper"
)

func TestBlobSweeperDeletesTheObjectsOfDeletedBodiesAndOrphansAnHourOldOnly(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	c := testkit.NewClock(time.Date(2026, 11, 1, 12, 10, 0, 0, time.UTC))
	blobs := &blob.Memory{Clock: c}
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: c.Now()}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "none", Name: "s", CreatedAt: c.Now()}
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: []byte("t"), Enabled: true,
		MaxBodyBytes: 1024, CreatedAt: c.Now()}
	for _, err := range []error{s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("k")}), s.CreateConnection(ctx, conn), s.CreateEndpoint(ctx, ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// put writes an object at the clock's time; commit also commits its
	// message. Each is a second after the last.
	put := func(commit bool) *intake.Message {
		t.Helper()
		c.Advance(time.Second)
		m := &intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
			Header: http.Header{}, Digest: "d", ReceivedAt: c.Now(), State: intake.MessageQueued, MaxAttempts: 6, NextAttemptAt: c.Now()}
		m.BlobKey = intake.BlobKey(m.ReceivedAt, m.ID)
		if err := blobs.Put(ctx, m.BlobKey, strings.NewReader("large"), 5); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := s.Ingest(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	kept, erased, orphan, original := put(true), put(true), put(false), put(true)
	// The replay names its original's object, and is received later.
	c.Advance(time.Second)
	replay := &intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{}, BlobKey: original.BlobKey, Digest: "d", ReceivedAt: c.Now(), State: intake.MessageQueued,
		MaxAttempts: 6, NextAttemptAt: c.Now(), ReplayOf: original.ID}
	if err := s.InsertReplay(ctx, replay); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*intake.Message{erased, original} {
		if n, err := s.EraseBodies(ctx, c.Now(), intake.Scope{}, ep.ID, m.ReceivedAt, m.ReceivedAt.Add(time.Second)); err != nil || n != 1 {
			t.Fatalf("erased %d, %v", n, err)
		}
	}
	has := func(m *intake.Message) bool {
		for _, k := range blobs.Keys() {
			if k == m.BlobKey {
				return true
			}
		}
		return false
	}
	sw := sweeper.NewBlobs(sweeper.BlobsConfig{Store: s, Blobs: blobs, Clock: c, Batch: 2})

	// Object storage down: nothing is forgotten, the next sweep retries.
	blobs.SetDown(true)
	if _, _, err := sw.RunOnce(ctx); err == nil {
		t.Fatal("a sweep with object storage down reported no error")
	}
	if keys, _ := s.PendingBlobDeletes(ctx, time.Time{}, 10); len(keys) != 2 {
		t.Fatalf("pending deletes after a failed sweep: %v, want both kept", keys)
	}
	blobs.SetDown(false)
	deleted, orphans, err := sw.RunOnce(ctx)
	if err != nil || deleted != 1 || orphans != 0 || has(erased) || !has(original) || !has(kept) || !has(orphan) {
		t.Fatalf("sweep: %d deleted, %d orphans, %v; erased %v original %v kept %v orphan %v",
			deleted, orphans, err, has(erased), has(original), has(kept), has(orphan))
	}
	if keys, _ := s.PendingBlobDeletes(ctx, time.Time{}, 10); len(keys) != 0 {
		t.Fatalf("pending deletes left: %v", keys)
	}

	// The orphan's hour (12:00) ends at 13:00; an hour after that it goes,
	// not a second before. Objects bodies name stay.
	c.Set(time.Date(2026, 11, 1, 13, 59, 59, 0, time.UTC))
	if _, orphans, err := sw.RunOnce(ctx); err != nil || orphans != 0 || !has(orphan) {
		t.Fatalf("at 13:59:59: %d orphans deleted, %v", orphans, err)
	}
	c.Set(time.Date(2026, 11, 1, 14, 0, 0, 0, time.UTC))
	if _, orphans, err := sw.RunOnce(ctx); err != nil || orphans != 1 || has(orphan) || !has(kept) || !has(original) {
		t.Fatalf("at 14:00: %d orphans deleted (%v); orphan %v kept %v original %v", orphans, err, has(orphan), has(kept), has(original))
	}
}

// Each sweep of object storage that ends counts in
// intake_blob_sweeps_total by its result, one that deleted nothing too (so
// an operator, or a test, can tell a sweep ran); one that shutdown cut
// short counts neither way.
func TestEachBlobSweepCountsByItsResultAndOneCutShortNot(t *testing.T) {
	ctx := context.Background()
	c := testkit.NewClock(time.Date(2026, 11, 1, 12, 10, 0, 0, time.UTC))
	blobs := &blob.Memory{Clock: c}
	m := metrics.New()
	sw := sweeper.NewBlobs(sweeper.BlobsConfig{Store: testkit.SQLite(t), Blobs: blobs, Clock: c, Metrics: m})
	count := func() (swept, failed float64) {
		return testutil.ToFloat64(m.BlobSweeps.WithLabelValues("swept")), testutil.ToFloat64(m.BlobSweeps.WithLabelValues("failed"))
	}
	if deleted, orphans, err := sw.RunOnce(ctx); err != nil || deleted+orphans != 0 {
		t.Fatalf("a sweep of nothing: %d deleted, %d orphans, %v", deleted, orphans, err)
	}
	if swept, failed := count(); swept != 1 || failed != 0 {
		t.Fatalf("after a sweep that deleted nothing: %v swept, %v failed; want 1, 0", swept, failed)
	}
	blobs.SetDown(true)
	if _, _, err := sw.RunOnce(ctx); err == nil {
		t.Fatal("a sweep with object storage down reported no error")
	}
	if swept, failed := count(); swept != 1 || failed != 1 {
		t.Fatalf("after a failed sweep: %v swept, %v failed; want 1, 1", swept, failed)
	}
	cut, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := sw.RunOnce(cut); err == nil {
		t.Fatal("a sweep cut short reported no error")
	}
	if swept, failed := count(); swept != 1 || failed != 1 {
		t.Fatalf("after a sweep cut short: %v swept, %v failed; want 1, 1", swept, failed)
	}
}

// replicaFunc is a replica whose Sync is a function.
type replicaFunc func(context.Context) error

func (f replicaFunc) Sync(ctx context.Context) error { return f(ctx) }

// With --replicate, a deleted body's object goes only once the replica
// holds the delete: a store restored from it then names no object that is
// gone. While the replica cannot be reached the object stays, and the
// delete stays pending.
func TestBlobSweeperDeletesAnObjectOnlyOnceTheReplicaHoldsItsBodysDelete(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	c := testkit.NewClock(time.Date(2026, 11, 1, 12, 10, 0, 0, time.UTC))
	blobs := &blob.Memory{Clock: c}
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: c.Now()}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "none", Name: "s", CreatedAt: c.Now()}
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: []byte("t"), Enabled: true,
		MaxBodyBytes: 1024, CreatedAt: c.Now()}
	for _, err := range []error{s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("k")}), s.CreateConnection(ctx, conn), s.CreateEndpoint(ctx, ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	m := &intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{}, Digest: "d", ReceivedAt: c.Now(), State: intake.MessageQueued, MaxAttempts: 6, NextAttemptAt: c.Now()}
	m.BlobKey = intake.BlobKey(m.ReceivedAt, m.ID)
	if err := blobs.Put(ctx, m.BlobKey, strings.NewReader("large"), 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Ingest(ctx, m); err != nil {
		t.Fatal(err)
	}
	if n, err := s.EraseBodies(ctx, c.Now(), intake.Scope{}, ep.ID, m.ReceivedAt, m.ReceivedAt.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("erased %d, %v", n, err)
	}
	// Past the window restores reach back.
	c.Advance(time.Hour + time.Second)
	var down error
	var objectsAtSync []int
	sw := sweeper.NewBlobs(sweeper.BlobsConfig{Store: s, Blobs: blobs, Clock: c, ReplicaRetention: time.Hour, Replica: replicaFunc(func(context.Context) error {
		objectsAtSync = append(objectsAtSync, len(blobs.Keys()))
		return down
	})})
	down = errors.New("the replica cannot be reached")
	if _, _, err := sw.RunOnce(ctx); err == nil {
		t.Fatal("a sweep with the replica unreachable reported no error")
	}
	if len(blobs.Keys()) != 1 {
		t.Fatal("the object went while the replica could not hold its body's delete")
	}
	if keys, _ := s.PendingBlobDeletes(ctx, time.Time{}, 10); len(keys) != 1 {
		t.Fatalf("pending deletes: %v, want the delete kept", keys)
	}
	down = nil
	if deleted, _, err := sw.RunOnce(ctx); err != nil || deleted != 1 || len(blobs.Keys()) != 0 {
		t.Fatalf("replica back: %d deleted, %v, objects %v", deleted, err, blobs.Keys())
	}
	if len(objectsAtSync) != 2 || objectsAtSync[1] != 1 {
		t.Errorf("objects when the replica was asked: %v, want the object still there each time", objectsAtSync)
	}
}

// With --replicate a store may be restored to any time the replica still
// reaches (--replicate-retention), and names the objects its bodies named
// then: the object of a body deleted since is kept until its delete was
// recorded longer ago than that, and an orphan (which a store restored to
// a time may name too) until it is as old. Without a replica, both go as
// soon as they did.
func TestWithAReplicaObjectsAreKeptAsLongAsARestoreCanNameThem(t *testing.T) {
	day := 24 * time.Hour
	for _, replicated := range []bool{true, false} {
		t.Run(fmt.Sprintf("replicated=%v", replicated), func(t *testing.T) {
			ctx := context.Background()
			s := testkit.SQLite(t)
			c := testkit.NewClock(time.Date(2026, 11, 1, 12, 10, 0, 0, time.UTC))
			blobs := &blob.Memory{Clock: c}
			org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: c.Now()}
			conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "none", Name: "s", CreatedAt: c.Now()}
			ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: []byte("t"), Enabled: true,
				MaxBodyBytes: 1024, CreatedAt: c.Now()}
			for _, err := range []error{s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("k")}),
				s.CreateConnection(ctx, conn), s.CreateEndpoint(ctx, ep)} {
				if err != nil {
					t.Fatal(err)
				}
			}
			put := func(commit bool) string {
				t.Helper()
				m := &intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
					Header: http.Header{}, Digest: "d", ReceivedAt: c.Now(), State: intake.MessageQueued, MaxAttempts: 6, NextAttemptAt: c.Now()}
				m.BlobKey = intake.BlobKey(m.ReceivedAt, m.ID)
				if err := blobs.Put(ctx, m.BlobKey, strings.NewReader("large"), 5); err != nil {
					t.Fatal(err)
				}
				if commit {
					if err := s.Ingest(ctx, m); err != nil {
						t.Fatal(err)
					}
				}
				return m.BlobKey
			}
			erased, orphan := put(true), put(false)
			erasedAt := c.Now() // 12:10
			if n, err := s.EraseBodies(ctx, erasedAt, intake.Scope{}, ep.ID, erasedAt, erasedAt.Add(time.Second)); err != nil || n != 1 {
				t.Fatalf("erased %d, %v", n, err)
			}
			cfg := sweeper.BlobsConfig{Store: s, Blobs: blobs, Clock: c}
			if replicated {
				cfg.Replica, cfg.ReplicaRetention = replicaFunc(func(context.Context) error { return nil }), day
			}
			sw := sweeper.NewBlobs(cfg)
			has := func(key string) bool { return slices.Contains(blobs.Keys(), key) }
			sweep := func(at time.Time, wantErased, wantOrphan bool) {
				t.Helper()
				c.Set(at)
				if _, _, err := sw.RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
				if has(erased) != wantErased || has(orphan) != wantOrphan {
					t.Fatalf("at %s: the erased body's object there %v, want %v; the orphan there %v, want %v",
						at.Format(time.DateTime), has(erased), wantErased, has(orphan), wantOrphan)
				}
			}
			if !replicated {
				// As ever: the erased body's object at once, the orphan an
				// hour after its hour ended.
				sweep(erasedAt, false, true)
				sweep(time.Date(2026, 11, 1, 13, 59, 59, 0, time.UTC), false, true)
				sweep(time.Date(2026, 11, 1, 14, 0, 0, 0, time.UTC), false, false)
				return
			}
			sweep(erasedAt, true, true)
			sweep(time.Date(2026, 11, 1, 14, 0, 0, 0, time.UTC), true, true)
			// A restore to 12:09 can be asked for until 12:10 the next day.
			sweep(erasedAt.Add(day), true, true)
			if keys, _ := s.PendingBlobDeletes(ctx, time.Time{}, 10); len(keys) != 1 {
				t.Fatalf("pending deletes while the object is kept: %v, want its delete kept", keys)
			}
			sweep(erasedAt.Add(day+time.Second), false, true)
			if keys, _ := s.PendingBlobDeletes(ctx, time.Time{}, 10); len(keys) != 0 {
				t.Fatalf("pending deletes left: %v", keys)
			}
			// The orphan's hour ends at 13:00: a day after that it goes.
			sweep(time.Date(2026, 11, 2, 12, 59, 59, 0, time.UTC), false, true)
			sweep(time.Date(2026, 11, 2, 13, 0, 0, 0, time.UTC), false, false)
		})
	}
}
