package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// blobMessage is a message whose body is in object storage under key.
func (f fixture) blobMessage(at time.Time) *intake.Message {
	m := f.message("", at)
	m.Body, m.BlobKey = nil, intake.BlobKey(at, m.ID)
	return m
}

func settleAll(t *testing.T, s intake.Store, now time.Time) {
	t.Helper()
	for _, c := range claimAll(t, s, now) {
		if _, err := s.SettleMessage(context.Background(), now, intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt,
			To: intake.MessageProcessed, Outcome: intake.OutcomeNoEvents}); err != nil {
			t.Fatal(err)
		}
	}
}

// pending lists every pending delete.
func pending(t *testing.T, s intake.Store) []string {
	t.Helper()
	return pendingBefore(t, s, time.Time{})
}

// pendingBefore lists the pending deletes recorded before the time before
// (zero: all).
func pendingBefore(t *testing.T, s intake.Store, before time.Time) []string {
	t.Helper()
	keys, err := s.PendingBlobDeletes(context.Background(), before, 100)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// testBlobBodies: a body in object storage is stored as its key, read back
// as its key, shared by its replays, and every way a body is deleted
// (erasure, body retention, message retention) records the key for the
// sweeper in the same transaction.
func testBlobBodies(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m := f.blobMessage(t0)
	if err := s.Ingest(ctx, m); err != nil {
		t.Fatal(err)
	}
	small := f.ingest(t, s, `{"small":true}`, t0)
	b, err := s.MessageBody(ctx, intake.Scope{OrgID: f.org.ID}, m.ID)
	if err != nil || b.BlobKey != m.BlobKey || b.Body != nil || b.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("stored body = %+v %v, want the key %s and the headers", b, err, m.BlobKey)
	}
	if b, _ := s.MessageBody(ctx, intake.Scope{}, small.ID); b.BlobKey != "" || string(b.Body) != `{"small":true}` {
		t.Fatalf("a small body = %+v", b)
	}
	claims := claimAll(t, s, t0)
	byID := map[string]intake.Message{}
	for _, c := range claims {
		byID[c.Message.ID] = c.Message
	}
	if c := byID[m.ID]; c.BlobKey != m.BlobKey || c.Body != nil || c.BodyExpired || c.Header.Get("Content-Type") == "" {
		t.Fatalf("claimed = %+v, want its key and headers", c)
	}
	if c := byID[small.ID]; c.BlobKey != "" || string(c.Body) != `{"small":true}` {
		t.Fatalf("claimed small = %+v", c)
	}
	other := intake.BlobKey(t0, intake.NewID())
	if named, err := s.BlobsReferenced(ctx, []string{m.BlobKey, other}); err != nil || !named[m.BlobKey] || named[other] || len(named) != 1 {
		t.Fatalf("referenced = %v %v, want only %s", named, err, m.BlobKey)
	}

	// A replay names the same object; one of an object no body names any
	// more is refused and records nothing.
	replay := f.blobMessage(t0)
	replay.BlobKey, replay.ReplayOf = m.BlobKey, m.ID
	if err := s.InsertReplay(ctx, replay); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.MessageBody(ctx, intake.Scope{}, replay.ID); b.BlobKey != m.BlobKey {
		t.Fatalf("replay's body = %+v, want the original's key", b)
	}
	orphanReplay := f.blobMessage(t0)
	orphanReplay.BlobKey, orphanReplay.ReplayOf = other, m.ID
	wantCode(t, s.InsertReplay(ctx, orphanReplay), intake.ENOTFOUND)
	if _, err := s.Message(ctx, intake.Scope{}, orphanReplay.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("a refused replay left its message: %v", err)
	}

	// Erasure, scoped to the org: both bodies naming the object go, the
	// key once among the pending deletes, no key for the small body.
	if n, err := s.EraseBodies(ctx, t0.Add(time.Hour), intake.Scope{OrgID: f.org.ID}, f.ep.ID, t0, t0.Add(time.Second)); err != nil || n != 3 {
		t.Fatalf("erased %d, %v; want 3", n, err)
	}
	if keys := pending(t, s); len(keys) != 1 || keys[0] != m.BlobKey {
		t.Fatalf("pending deletes = %v, want [%s]", keys, m.BlobKey)
	}
	if named, _ := s.BlobsReferenced(ctx, []string{m.BlobKey}); named[m.BlobKey] {
		t.Fatal("an erased body is still referenced")
	}
	if err := s.ForgetBlobDeletes(ctx, []string{m.BlobKey}); err != nil || len(pending(t, s)) != 0 {
		t.Fatalf("forget: %v, left %v", err, pending(t, s))
	}

	// Body retention, then message retention.
	later := t0.Add(time.Hour)
	dropped := f.blobMessage(later)
	if err := s.Ingest(ctx, dropped); err != nil {
		t.Fatal(err)
	}
	settleAll(t, s, later)
	if n := dropBodies(t, s, later.Add(48*time.Hour), 24*time.Hour, 1); n != 1 {
		t.Fatalf("dropped %d bodies, want 1", n)
	}
	if keys := pending(t, s); len(keys) != 1 || keys[0] != dropped.BlobKey {
		t.Fatalf("after dropping bodies, pending = %v, want [%s]", keys, dropped.BlobKey)
	}
	// Recorded at the sweep's now.
	if keys := pendingBefore(t, s, later.Add(48*time.Hour)); len(keys) != 0 {
		t.Fatalf("pending before the drop's time: %v, want none", keys)
	}
	deleted := f.blobMessage(later)
	if err := s.Ingest(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	settleAll(t, s, later)
	if n, err := s.DeleteSettled(ctx, later.Add(31*24*time.Hour), 30*24*time.Hour, 100); err != nil || n < 1 {
		t.Fatalf("deleted %d messages, %v", n, err)
	}
	if _, err := s.Message(ctx, intake.Scope{}, deleted.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("a deleted message is still there: %v", err)
	}
	keys := pending(t, s)
	if len(keys) != 2 || !contains(keys, deleted.BlobKey) || !contains(keys, dropped.BlobKey) {
		t.Fatalf("after deleting messages, pending = %v, want %s and %s", keys, dropped.BlobKey, deleted.BlobKey)
	}
	// Each at the now of the statement that deleted it, the oldest first.
	if keys := pendingBefore(t, s, later.Add(31*24*time.Hour)); len(keys) != 1 || keys[0] != dropped.BlobKey {
		t.Fatalf("pending before the delete of messages: %v, want only [%s]", keys, dropped.BlobKey)
	}
	if keys := pendingBefore(t, s, later.Add(31*24*time.Hour+time.Microsecond)); len(keys) != 2 || keys[0] != dropped.BlobKey || keys[1] != deleted.BlobKey {
		t.Fatalf("pending just after it: %v, want [%s %s]", keys, dropped.BlobKey, deleted.BlobKey)
	}
}

// testBlobDeleteTimes: a pending delete keeps when it was recorded, and
// when bodies naming one object go at different times, the latest (a
// store restored to any time before it names the object), whichever goes
// first; the sweeper reads them oldest first, and only those recorded
// before a time.
func testBlobDeleteTimes(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	// Received a second apart: a, own, a's replay, b, b's replay.
	a, own := f.blobMessage(t0), f.blobMessage(t0.Add(time.Second))
	for _, m := range []*intake.Message{a, own} {
		if err := s.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	replay := func(of *intake.Message, at time.Time) {
		t.Helper()
		r := f.blobMessage(at)
		r.BlobKey, r.ReplayOf = of.BlobKey, of.ID
		if err := s.InsertReplay(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	replay(a, t0.Add(2*time.Second))
	b := f.blobMessage(t0.Add(3 * time.Second))
	if err := s.Ingest(ctx, b); err != nil {
		t.Fatal(err)
	}
	replay(b, t0.Add(4*time.Second))
	at1210, at1220 := t0.Add(10*time.Minute), t0.Add(20*time.Minute)
	erase := func(now time.Time, from, to time.Duration, want int) {
		t.Helper()
		if n, err := s.EraseBodies(ctx, now, sc, f.ep.ID, t0.Add(from), t0.Add(to)); err != nil || n != want {
			t.Fatalf("erased %d, %v; want %d", n, err, want)
		}
	}
	// a's replay goes at 12:20, then a and own at 12:10; b goes at 12:10,
	// then its replay at 12:20.
	erase(at1220, 2*time.Second, 3*time.Second, 1)
	erase(at1210, 0, 2*time.Second, 2)
	erase(at1210, 3*time.Second, 4*time.Second, 1)
	erase(at1220, 4*time.Second, 5*time.Second, 1)
	later := []string{a.BlobKey, b.BlobKey}
	slices.Sort(later)
	all := append([]string{own.BlobKey}, later...)
	for _, c := range []struct {
		before time.Time
		want   []string
	}{
		{at1210, nil},
		{at1210.Add(time.Microsecond), all[:1]},
		{at1220, all[:1]},
		{at1220.Add(time.Microsecond), all},
		{time.Time{}, all},
	} {
		if got := pendingBefore(t, s, c.before); !slices.Equal(got, c.want) {
			t.Errorf("pending before %s = %v, want %v (%s recorded at 12:10; %s, %s at 12:20)",
				c.before.Format(time.TimeOnly), got, c.want, own.BlobKey, a.BlobKey, b.BlobKey)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
