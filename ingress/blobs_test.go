package ingress_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/ingress"
)

func randomBody(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func blobSetup(t *testing.T, blobs intake.Blobs) *env {
	return setup(t, ingress.Config{Blobs: blobs, BlobThreshold: 1024}, func(ep *intake.Endpoint) { ep.MaxBodyBytes = 64 << 10 })
}

func TestIngressStreamsABodyAboveTheThresholdIntoObjectStorageBeforeItsCommit(t *testing.T) {
	blobs := &blob.Memory{}
	e := blobSetup(t, blobs)
	large, small := randomBody(t, 40<<10), []byte(`{"small":true}`)
	if w := e.post("/webhooks/"+e.token, bytes.NewReader(large), http.Header{"Content-Type": {"application/octet-stream"}}); w.Code != 200 {
		t.Fatalf("large body: status %d %s", w.Code, w.Body)
	}
	// Exactly the threshold stays in the database.
	atThreshold := randomBody(t, 1024)
	for _, b := range [][]byte{small, atThreshold} {
		if w := e.post("/webhooks/"+e.token, bytes.NewReader(b), nil); w.Code != 200 {
			t.Fatalf("small body: status %d", w.Code)
		}
	}
	keys := blobs.Keys()
	if len(keys) != 1 {
		t.Fatalf("objects %v, want one: the large body's", keys)
	}
	byDigest := map[string]intake.Message{}
	for _, m := range e.stored(t) {
		byDigest[m.Digest] = m
	}
	m, ok := byDigest[digest(large)]
	if !ok {
		t.Fatal("no message carries the large body's digest")
	}
	stored, err := e.store.MessageBody(context.Background(), intake.Scope{}, m.ID)
	if err != nil || stored.BlobKey != keys[0] || stored.Body != nil || stored.BlobKey != intake.BlobKey(m.ReceivedAt, m.ID) {
		t.Fatalf("stored body %+v %v, want the key %s", stored, err, keys[0])
	}
	got, err := intake.ReadBody(context.Background(), blobs, nil, stored.BlobKey)
	if err != nil || !bytes.Equal(got, large) {
		t.Fatalf("object holds %d bytes (%v), want the %d received", len(got), err, len(large))
	}
	for _, b := range [][]byte{small, atThreshold} {
		sb, _ := e.store.MessageBody(context.Background(), intake.Scope{}, byDigest[digest(b)].ID)
		if sb.BlobKey != "" || !bytes.Equal(sb.Body, b) {
			t.Fatalf("a body at or under the threshold went elsewhere: %+v", sb)
		}
	}
}

// unsized hides a reader's length, as a chunked request does.
type unsized struct{ r io.Reader }

func (u unsized) Read(p []byte) (int, error) { return u.r.Read(p) }

func TestIngressRefusesALargeBodyPastItsLimitWhileStreamingAndKeepsNothing(t *testing.T) {
	blobs := &blob.Memory{}
	e := blobSetup(t, blobs)
	over := randomBody(t, 64<<10+1)
	for name, body := range map[string]io.Reader{"sized": bytes.NewReader(over), "chunked": unsized{bytes.NewReader(over)}} {
		if w := e.post("/webhooks/"+e.token, body, nil); w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s: status %d, want 413", name, w.Code)
		}
	}
	if keys, msgs := blobs.Keys(), e.stored(t); len(keys) != 0 || len(msgs) != 0 {
		t.Fatalf("kept %d objects and %d messages of refused bodies", len(keys), len(msgs))
	}
	// A chunked body within the limit streams like any other.
	ok := randomBody(t, 50<<10)
	if w := e.post("/webhooks/"+e.token, unsized{bytes.NewReader(ok)}, nil); w.Code != 200 {
		t.Fatalf("chunked body: status %d", w.Code)
	}
	if msgs := e.stored(t); len(msgs) != 1 || msgs[0].Digest != digest(ok) || len(blobs.Keys()) != 1 {
		t.Fatalf("chunked body stored as %+v, objects %v", msgs, blobs.Keys())
	}
}

func TestIngressAnswers503ToLargeBodiesWhileObjectStorageIsDownAndTakesSmallOnes(t *testing.T) {
	blobs := &blob.Memory{}
	e := blobSetup(t, blobs)
	large := randomBody(t, 8<<10)
	blobs.SetDown(true)
	w := e.post("/webhooks/"+e.token, bytes.NewReader(large), nil)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("large body while down: status %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	assertAnswerRevealsNothing(t, w, e)
	if w := e.post("/webhooks/"+e.token, strings.NewReader(`{"small":1}`), nil); w.Code != 200 {
		t.Fatalf("small body while down: status %d", w.Code)
	}
	if msgs := e.stored(t); len(msgs) != 1 || msgs[0].Digest != sha256hex(`{"small":1}`) {
		t.Fatalf("stored while down: %+v, want the small body alone", msgs)
	}
	blobs.SetDown(false)
	if w := e.post("/webhooks/"+e.token, bytes.NewReader(large), nil); w.Code != 200 {
		t.Fatalf("large body once back: status %d", w.Code)
	}
	if msgs, keys := e.stored(t), blobs.Keys(); len(msgs) != 2 || len(keys) != 1 {
		t.Fatalf("after recovery: %d messages, objects %v", len(msgs), keys)
	}
}

// stallingBlobs is object storage that reads a body whole and then never
// answers, as through a partition; the put ends only when its context
// does.
type stallingBlobs struct{ intake.Blobs }

func (stallingBlobs) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if _, err := io.Copy(io.Discard, body); err != nil {
		return err
	}
	<-ctx.Done()
	return intake.Errorf(intake.EUNAVAILABLE, "put %s: %v", key, ctx.Err())
}

// TestIngressAnswers503WhenObjectStorageDoesNotAnswerWithinTheStoreWait:
// a large body object storage takes but never answers for (a partition
// holds the answer) is given up after the store wait and answered 503 with
// Retry-After, well within the time a provider waits, rather than when
// the provider hangs up; nothing is stored.
func TestIngressAnswers503WhenObjectStorageDoesNotAnswerWithinTheStoreWait(t *testing.T) {
	const wait = 200 * time.Millisecond // above an endpoint lookup's time on a loaded machine
	e := setup(t, ingress.Config{Blobs: stallingBlobs{&blob.Memory{}}, BlobThreshold: 1024, StoreWait: wait},
		func(ep *intake.Endpoint) { ep.MaxBodyBytes = 64 << 10 })
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- e.post("/webhooks/"+e.token, bytes.NewReader(randomBody(t, 8<<10)), nil) }()
	select {
	case w := <-done:
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("status %d %s (Retry-After %q), want 503 with Retry-After", w.Code, w.Body, w.Header().Get("Retry-After"))
		}
	case <-time.After(25 * wait):
		t.Fatalf("no answer after %v while object storage did not answer; the store wait is %v", 25*wait, wait)
	}
	if msgs := e.stored(t); len(msgs) != 0 {
		t.Fatalf("%d messages stored for a body object storage never took", len(msgs))
	}
}

// slowBody is a provider sending its body slowly: each read returns at
// most 2 KiB, pause after it was asked for.
type slowBody struct {
	r     io.Reader
	pause time.Duration
}

func (b slowBody) Read(p []byte) (int, error) {
	<-time.After(b.pause)
	return b.r.Read(p[:min(len(p), 2<<10)])
}

// TestIngressWaitsOnASlowProviderPastTheStoreWait: the store wait bounds
// the time spent waiting on object storage, not on the provider's body: a
// large body that takes many store waits to arrive is stored and answered
// 200.
func TestIngressWaitsOnASlowProviderPastTheStoreWait(t *testing.T) {
	const wait = 200 * time.Millisecond
	blobs := &blob.Memory{}
	e := setup(t, ingress.Config{Blobs: blobs, BlobThreshold: 1024, StoreWait: wait},
		func(ep *intake.Endpoint) { ep.MaxBodyBytes = 64 << 10 })
	large := randomBody(t, 8<<10)
	if w := e.post("/webhooks/"+e.token, slowBody{r: bytes.NewReader(large), pause: 2 * wait}, nil); w.Code != http.StatusOK {
		t.Fatalf("a slow provider's large body: status %d %s, want 200", w.Code, w.Body)
	}
	if msgs := e.stored(t); len(msgs) != 1 || msgs[0].Digest != digest(large) || len(blobs.Keys()) != 1 {
		t.Fatalf("stored %+v, objects %v; want the large body", msgs, blobs.Keys())
	}
}
