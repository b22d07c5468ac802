package control_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/worker"
)

// withBlobs gives e's worker and control plane a blob store.
func (e *env) withBlobs(blobs intake.Blobs) {
	e.w = worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Backoff: intake.Backoff{Base: time.Second}, Blobs: blobs})
	e.ctl = control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Blobs: blobs})
}

// receiveLarge stores a signed GitHub delivery as ingress does with a body
// above the threshold: the object first, then the message naming it.
func (e *env) receiveLarge(t *testing.T, blobs intake.Blobs, delivery string) (string, []byte) {
	t.Helper()
	body := fmt.Appendf(nil, `{"action":"opened","issue":{"node_id":"I_%s"},"pad":%q}`, delivery, strings.Repeat("x", 512<<10))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sum := sha256.Sum256(body)
	m := &intake.Message{ID: intake.NewID(), OrgID: e.org.ID, ConnectionID: e.conn.ID, EndpointID: e.ep.ID, Method: "POST",
		Header: http.Header{"X-Github-Event": {"issues"}, "X-Github-Delivery": {delivery}, "Content-Type": {"application/json"},
			"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(mac.Sum(nil))}},
		Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
		MaxAttempts: 6, NextAttemptAt: e.clock.Now()}
	m.BlobKey = intake.BlobKey(m.ReceivedAt, m.ID)
	if err := blobs.Put(context.Background(), m.BlobKey, strings.NewReader(string(body)), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m.ID, body
}

func TestABodyInObjectStorageIsVerifiedReadAndReplayedFromItsObject(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	blobs := &blob.Memory{}
	e.withBlobs(blobs)
	c := e.consumer(t, "github.*")
	id, body := e.receiveLarge(t, blobs, "d-large")
	e.settle(t)
	m, _ := e.store.Message(ctx, intake.Scope{}, id)
	if m.State != intake.MessageProcessed || len(c.envelopes()) != 1 {
		t.Fatalf("message %s/%s %s, %d deliveries: the worker should verify the body read from its object",
			m.State, m.Outcome, m.ErrorMessage, len(c.envelopes()))
	}
	r, size, header, err := e.ctl.OpenMessageBody(ctx, as(intake.Scope{OrgID: e.org.ID}), id)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if string(got) != string(body) || size != int64(len(body)) || header.Get("X-Github-Delivery") != "d-large" {
		t.Fatalf("streamed %d bytes (size %d), want the %d received", len(got), size, len(body))
	}

	replay, err := e.ctl.ReplayMessage(ctx, as(intake.Scope{}), id)
	if err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if m, _ := e.store.Message(ctx, intake.Scope{}, replay.ID); m.State != intake.MessageProcessed || len(c.envelopes()) != 2 {
		t.Fatalf("replay %s/%s, %d deliveries", m.State, m.ErrorMessage, len(c.envelopes()))
	}
	if keys := blobs.Keys(); len(keys) != 1 {
		t.Fatalf("objects %v: a replay names its original's object, it makes no copy", keys)
	}

	// Object storage down: reads are unavailable (503), never "not found".
	blobs.SetDown(true)
	if _, _, _, err := e.ctl.OpenMessageBody(ctx, as(intake.Scope{}), id); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("read with object storage down: %v, want unavailable", err)
	}
	if _, _, err := e.ctl.MessageBody(ctx, as(intake.Scope{}), id); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("whole read with object storage down: %v, want unavailable", err)
	}
}

func TestAWorkerRetriesABodyItCannotReadFromObjectStorage(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	blobs := &blob.Memory{}
	e.withBlobs(blobs)
	id, _ := e.receiveLarge(t, blobs, "d-1")
	blobs.SetDown(true)
	e.settle(t)
	m, _ := e.store.Message(ctx, intake.Scope{}, id)
	if m.State != intake.MessageFailed || m.ErrorCode != intake.ErrCodeTransient {
		t.Fatalf("message %s/%s, want failed for a retry", m.State, m.ErrorCode)
	}
	blobs.SetDown(false)
	e.clock.Advance(time.Hour)
	e.settle(t)
	if m, _ := e.store.Message(ctx, intake.Scope{}, id); m.State != intake.MessageProcessed {
		t.Fatalf("message %s/%s once object storage is back", m.State, m.ErrorMessage)
	}
}

func TestEndpointsTakeBodiesUpTo100MiBOnlyWithABlobStore(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	big, over := int64(intake.MaxBlobBodyBytes), int64(intake.MaxBlobBodyBytes+1)
	_, err := e.ctl.CreateEndpoint(ctx, as(intake.Scope{}), e.conn.ID, control.Limits{MaxBodyBytes: &big})
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(err.Error(), "with a blob store") {
		t.Fatalf("100 MiB without a blob store: %v, want invalid, naming the blob store", err)
	}
	e.withBlobs(&blob.Memory{})
	if _, err := e.ctl.CreateEndpoint(ctx, as(intake.Scope{}), e.conn.ID, control.Limits{MaxBodyBytes: &big}); err != nil {
		t.Fatalf("100 MiB with a blob store: %v", err)
	}
	if _, err := e.ctl.CreateEndpoint(ctx, as(intake.Scope{}), e.conn.ID, control.Limits{MaxBodyBytes: &over}); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("over 100 MiB with a blob store: %v, want invalid", err)
	}
}
