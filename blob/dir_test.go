package blob_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
)

func dir(t *testing.T) *blob.Dir {
	t.Helper()
	d, err := blob.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDirKeepsItsObjectsAcrossReopeningAndCountsTheirBytes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := blob.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	k := intake.BlobKey(at, "m1")
	if err := d.Put(ctx, k, strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	// Written again under the same key (a retried commit): counted once.
	if err := d.Put(ctx, k, strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	if d.Bytes() != 10 {
		t.Fatalf("bytes = %d, want 10", d.Bytes())
	}
	// A put cut short by a crash leaves a spool file: gone on reopening,
	// and never counted or listed.
	if err := os.WriteFile(filepath.Join(root, ".spool", "put-cut"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := blob.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if again.Bytes() != 10 {
		t.Fatalf("bytes after reopening = %d, want 10", again.Bytes())
	}
	if left, _ := os.ReadDir(filepath.Join(root, ".spool")); len(left) != 0 {
		t.Fatalf("spool after reopening holds %d files", len(left))
	}
	got, err := intake.ReadBody(ctx, again, nil, k)
	if err != nil || string(got) != "0123456789" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if err := again.Delete(ctx, []string{k}); err != nil || again.Bytes() != 0 {
		t.Fatalf("after delete: bytes %d, %v", again.Bytes(), err)
	}
}

func TestDirRefusesAShortBodyAndKeysOutsideIt(t *testing.T) {
	ctx := context.Background()
	d := dir(t)
	k := intake.BlobKey(time.Now(), "short")
	if err := d.Put(ctx, k, strings.NewReader("abc"), 4); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("a body shorter than announced: %v, want EUNAVAILABLE", err)
	}
	if _, _, err := d.Open(ctx, k); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("open after a refused put: %v, want ENOTFOUND", err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", ".spool/put-1"} {
		if err := d.Put(ctx, bad, strings.NewReader("x"), 1); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("put %q = %v, want EINVALID", bad, err)
		}
		if _, _, err := d.Open(ctx, bad); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("open %q = %v, want EINVALID", bad, err)
		}
	}
}

func TestDirThatCannotWriteIsUnavailable(t *testing.T) {
	// The spool directory replaced by a file: no spool file can be made,
	// as on a disk that refuses writes.
	root := t.TempDir()
	d, err := blob.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, ".spool")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".spool"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err = d.Put(context.Background(), intake.BlobKey(time.Now(), "x"), strings.NewReader("x"), 1)
	if intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("put = %v, want EUNAVAILABLE", err)
	}
}

func TestOpenURLTakesADirectoryOrABucket(t *testing.T) {
	root := t.TempDir()
	s, err := blob.OpenURL(context.Background(), "file://"+root)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*blob.Dir); !ok {
		t.Fatalf("file:// opened %T", s)
	}
	if s, err := blob.OpenURL(context.Background(), "s3://bucket?endpoint=http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	} else if _, ok := s.(*blob.S3); !ok {
		t.Fatalf("s3:// opened %T", s)
	}
	for _, bad := range []string{"file://host/path", "file:relative", "ftp://x/y"} {
		if _, err := blob.OpenURL(context.Background(), bad); err == nil {
			t.Errorf("OpenURL(%q) accepted it", bad)
		}
	}
}
