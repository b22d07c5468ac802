package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/intakehq/intake"
)

// Dir keeps objects as files under a directory on the server's own disk:
// the embedded store's spool for bodies above the blob threshold, so a
// large body streams to disk rather than whole into memory and into the
// database. An object is durable (the file and its directory synced)
// before Put returns, as the message naming it commits only after.
type Dir struct {
	root  string
	bytes atomic.Int64 // the objects' total size, kept as they come and go
}

// spoolDir holds files being written; List never shows them.
const spoolDir = ".spool"

// OpenDir opens (creating it if need be) the directory root as a blob
// store, and sums the size of what it holds.
func OpenDir(root string) (*Dir, error) {
	if root == "" || !filepath.IsAbs(root) {
		return nil, fmt.Errorf("blob store directory %q: want an absolute path", root)
	}
	if err := os.MkdirAll(filepath.Join(root, spoolDir), 0o700); err != nil {
		return nil, fmt.Errorf("blob store directory: %w", err)
	}
	d := &Dir{root: root}
	// A write cut short by a crash left only its spool file: never named.
	if err := removeAll(filepath.Join(root, spoolDir)); err != nil {
		return nil, fmt.Errorf("blob store directory: %w", err)
	}
	var total int64
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("blob store directory: %w", err)
	}
	d.bytes.Store(total)
	return d, nil
}

// removeAll empties dir, keeping it.
func removeAll(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// EnsureBucket is there for the blob store's other kinds: the directory
// was made when it was opened.
func (d *Dir) EnsureBucket(ctx context.Context) error { return nil }

// Bytes is the size of every object held, for the storage quota.
func (d *Dir) Bytes() int64 { return d.bytes.Load() }

// path is key's file; a key that would leave the directory is refused.
func (d *Dir) path(key string) (string, error) {
	if !filepath.IsLocal(key) || strings.HasPrefix(key, spoolDir) {
		return "", intake.Errorf(intake.EINVALID, "blob key %q is not a local path", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes body to a spool file, syncs it, and moves it under key,
// syncing the directories it now hangs from. An error from body is
// returned as it is, and nothing is left behind.
func (d *Dir) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	path, err := d.path(key)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Join(d.root, spoolDir), "put-*")
	if err != nil {
		return unavailable(err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	r := &sticky{r: body}
	n, err := io.Copy(f, r)
	if r.err != nil {
		return r.err
	}
	if err != nil {
		return unavailable(err)
	}
	if size >= 0 && n != size {
		return unavailable(fmt.Errorf("blob: body of %d bytes, %d announced", n, size))
	}
	if err := f.Sync(); err != nil {
		return unavailable(err)
	}
	if err := f.Close(); err != nil {
		return unavailable(err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return unavailable(err)
	}
	old, _ := os.Stat(path)
	if err := os.Rename(f.Name(), path); err != nil {
		return unavailable(err)
	}
	done = true
	if old != nil {
		d.bytes.Add(-old.Size())
	}
	d.bytes.Add(n)
	// The rename, and any directory MkdirAll made, are durable once each
	// directory from the file's up to the root is synced.
	for p := dir; ; p = filepath.Dir(p) {
		if err := syncDir(p); err != nil {
			return unavailable(err)
		}
		if p == d.root || len(p) <= len(d.root) {
			return nil
		}
	}
}

func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Open streams the object under key.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	path, err := d.path(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, intake.Errorf(intake.ENOTFOUND, "no object %s", key)
	}
	if err != nil {
		return nil, 0, unavailable(err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, unavailable(err)
	}
	return f, info.Size(), nil
}

// Delete deletes the objects under keys; one already gone is no error.
func (d *Dir) Delete(ctx context.Context, keys []string) error {
	for _, k := range keys {
		path, err := d.path(k)
		if err != nil {
			return err
		}
		info, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.Remove(path)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return unavailable(err)
		}
		d.bytes.Add(-info.Size())
	}
	return nil
}

// List lists, in key order, up to limit objects whose keys sort after
// after and before before. It walks only the directories whose keys may
// fall between them.
func (d *Dir) List(ctx context.Context, after, before string, limit int) ([]intake.BlobObject, error) {
	var out []intake.BlobObject
	err := filepath.WalkDir(d.root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == d.root {
			return nil
		}
		rel, err := filepath.Rel(d.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			prefix := key + "/"
			// Every key below sorts from prefix to prefix+"\xff".
			if key == spoolDir || prefix >= before || (prefix < after && !strings.HasPrefix(after, prefix)) {
				return fs.SkipDir
			}
			return nil
		}
		if key <= after || key >= before {
			return nil
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		out = append(out, intake.BlobObject{Key: key, Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Store is a blob store as serve opens it from --blob-store.
type Store interface {
	intake.Blobs
	// EnsureBucket makes the bucket (or directory) if it is missing.
	EnsureBucket(ctx context.Context) error
}

// OpenURL opens the blob store u names: s3://BUCKET[/PREFIX]?… (Open), or
// file:///PATH, a directory on this server's disk (OpenDir).
func OpenURL(ctx context.Context, u string) (Store, error) {
	if rest, ok := strings.CutPrefix(u, "file://"); ok {
		if !strings.HasPrefix(rest, "/") {
			return nil, fmt.Errorf("blob store %q: want file:///ABSOLUTE/PATH", u)
		}
		return OpenDir(filepath.Clean(rest))
	}
	return Open(ctx, u)
}
