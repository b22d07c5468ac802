package intake

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// Blobs keeps the bodies too large for the database in object storage.
// A body's object is written before its message commits, so a message
// never names an object that is not there; an object whose commit failed
// is an orphan until the sweeper deletes it.
type Blobs interface {
	// Put stores body under key: size bytes, or, when size is negative,
	// whatever body holds until EOF. An error from body is returned as
	// it is (errors.Is finds it), and no object is left behind.
	Put(ctx context.Context, key string, body io.Reader, size int64) error
	// Open streams the object under key and tells its size; ENOTFOUND
	// when there is none.
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Delete deletes the objects under keys; one already gone is no error.
	Delete(ctx context.Context, keys []string) error
	// List lists, in key order, up to limit objects whose keys sort after
	// after and before before.
	List(ctx context.Context, after, before string, limit int) ([]BlobObject, error)
}

// BlobObject is an object a Blobs store lists.
type BlobObject struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Blob store limits and defaults.
const (
	// DefaultBlobThreshold is the size above which a body goes to object
	// storage (--blob-threshold).
	DefaultBlobThreshold = 256 << 10
	// MaxBodyBytes bounds an endpoint's max_body_bytes when bodies stay in
	// the database; MaxBlobBodyBytes with a blob store.
	MaxBodyBytes     = 64 << 20
	MaxBlobBodyBytes = 100 << 20
	// BlobOrphanAge is how old an object with no message must be before
	// the sweeper deletes it: no commit is in flight that long.
	BlobOrphanAge = time.Hour
)

// blobPrefix begins every body's key.
const blobPrefix = "bodies/"

// BlobKey names the object of a body received at at by message id. The
// hour in the key lets the orphan sweeper list objects in time order and
// never look at an hour in which a commit may still be in flight.
func BlobKey(at time.Time, id string) string {
	return BlobHour(at) + id
}

// BlobHour is the key prefix of the objects of bodies received in at's
// hour; every key of an earlier hour sorts before it.
func BlobHour(at time.Time) string {
	return blobPrefix + at.UTC().Format("2006/01/02/15/")
}

// StoredBody is a message's stored request: the headers, and the body
// either held in the database or named in object storage.
type StoredBody struct {
	Header http.Header
	// Body is the body kept in the database; nil when BlobKey is set.
	Body []byte
	// BlobKey names the body's object in the blob store; "" when the
	// database holds the body.
	BlobKey string
}

// Open streams the body from wherever it is kept. A body in object
// storage needs blobs (EUNAVAILABLE without one).
func (b StoredBody) Open(ctx context.Context, blobs Blobs) (io.ReadCloser, int64, error) {
	if b.BlobKey == "" {
		return io.NopCloser(bytes.NewReader(b.Body)), int64(len(b.Body)), nil
	}
	if blobs == nil {
		return nil, 0, Errorf(EUNAVAILABLE, "the body is in object storage, and no blob store is configured")
	}
	return blobs.Open(ctx, b.BlobKey)
}

// ReadBody reads a message's whole body from the database or, when its key
// names an object, from blobs.
func ReadBody(ctx context.Context, blobs Blobs, body []byte, blobKey string) ([]byte, error) {
	if blobKey == "" {
		return body, nil
	}
	r, size, err := StoredBody{BlobKey: blobKey}.Open(ctx, blobs)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := bytes.NewBuffer(make([]byte, 0, max(size, 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
