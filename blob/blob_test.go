package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/testkit"
)

// stream hides a reader's other methods (Seek, Len), as a request body
// does: Put must stream it as it comes.
type stream struct{ r io.Reader }

func (s stream) Read(p []byte) (int, error) { return s.r.Read(p) }

// failing fails after n bytes, as a client gone mid-body does.
type failing struct {
	n   int
	err error
}

func (f *failing) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

func TestS3StoresStreamsListsAndDeletesObjects(t *testing.T) {
	storesStreamsListsAndDeletes(t, testkit.S3(t))
}

func TestDirStoresStreamsListsAndDeletesObjects(t *testing.T) {
	storesStreamsListsAndDeletes(t, dir(t))
}

// storesStreamsListsAndDeletes is what every blob store does.
func storesStreamsListsAndDeletes(t *testing.T, b intake.Blobs) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	large := make([]byte, 3<<20)
	rand.Read(large)
	k1, k2, k3 := intake.BlobKey(at, "a"), intake.BlobKey(at.Add(time.Hour), "b"), intake.BlobKey(at.Add(2*time.Hour), "c")
	if err := b.Put(ctx, k1, stream{bytes.NewReader(large)}, int64(len(large))); err != nil {
		t.Fatal(err)
	}
	// A body of unknown length (chunked) is stored all the same.
	if err := b.Put(ctx, k2, stream{strings.NewReader("second")}, -1); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, k3, strings.NewReader("third"), 5); err != nil {
		t.Fatal(err)
	}
	got, err := intake.ReadBody(ctx, b, nil, k1)
	if err != nil || !bytes.Equal(got, large) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(large))
	}
	r, size, err := b.Open(ctx, k2)
	if err != nil || size != 6 {
		t.Fatalf("open: size %d, %v", size, err)
	}
	if s, _ := io.ReadAll(r); string(s) != "second" {
		t.Fatalf("unknown-length body read back as %q", s)
	}
	r.Close()

	// Listing is in key order, after and before bounds, up to a limit.
	all, err := b.List(ctx, "", "\xff", 10)
	if err != nil || len(all) != 3 || all[0].Key != k1 || all[1].Key != k2 || all[2].Key != k3 || all[0].Size != int64(len(large)) {
		t.Fatalf("list = %+v %v", all, err)
	}
	if time.Since(all[0].Modified) > time.Hour || time.Until(all[0].Modified) > time.Hour {
		t.Fatalf("modified %v is not about now", all[0].Modified)
	}
	if some, err := b.List(ctx, k1, intake.BlobHour(at.Add(2*time.Hour)), 10); err != nil || len(some) != 1 || some[0].Key != k2 {
		t.Fatalf("list between = %+v %v, want only %s", some, err, k2)
	}
	if one, err := b.List(ctx, "", "\xff", 1); err != nil || len(one) != 1 || one[0].Key != k1 {
		t.Fatalf("list limit 1 = %+v %v", one, err)
	}

	if err := b.Delete(ctx, []string{k1, k3, intake.BlobKey(at, "never-written")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Open(ctx, k1); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("open a deleted object: %v, want ENOTFOUND", err)
	}
	if left, _ := b.List(ctx, "", "\xff", 10); len(left) != 1 || left[0].Key != k2 {
		t.Fatalf("left after delete: %+v", left)
	}
}

func TestS3PutReturnsTheBodysOwnErrorAndLeavesNoObject(t *testing.T) {
	putReturnsTheBodysOwnError(t, testkit.S3(t))
}

func TestDirPutReturnsTheBodysOwnErrorAndLeavesNoObject(t *testing.T) {
	putReturnsTheBodysOwnError(t, dir(t))
}

func putReturnsTheBodysOwnError(t *testing.T, b intake.Blobs) {
	ctx := context.Background()
	gone := errors.New("client went away")
	key := intake.BlobKey(time.Now(), "cut")
	for _, size := range []int64{1 << 20, -1} {
		err := b.Put(ctx, key, &failing{n: 512 << 10, err: gone}, size)
		if !errors.Is(err, gone) {
			t.Fatalf("size %d: put = %v, want the body's error", size, err)
		}
	}
	if objs, err := b.List(ctx, "", "\xff", 10); err != nil || len(objs) != 0 {
		t.Fatalf("objects after failed puts: %+v %v", objs, err)
	}
}

func TestS3ThatCannotBeReachedIsUnavailable(t *testing.T) {
	ctx := context.Background()
	b, err := blob.Open(ctx, "s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "k", strings.NewReader("x"), 1); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("put = %v, want EUNAVAILABLE", err)
	}
	if _, _, err := b.Open(ctx, "k"); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("open = %v, want EUNAVAILABLE", err)
	}
}

func TestOpenRefusesAURLThatIsNotABucket(t *testing.T) {
	for _, u := range []string{"http://bucket", "s3://", "s3://user:pw@bucket", "s3://bucket?endpoint=ftp://x"} {
		if _, err := blob.Open(context.Background(), u); err == nil {
			t.Errorf("Open(%q) accepted it", u)
		}
	}
}
