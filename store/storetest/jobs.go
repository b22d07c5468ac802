package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testBulkJobs: a bulk job keeps its kind and the search it works through;
// each batch is written with the job's progress in one transaction and only
// while its runner holds it, so a runner that lost the job to another
// writes nothing; jobs take turns, the one saved least recently first.
func testBulkJobs(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	other := newFixture(t, s, "other")

	var events []intake.Event
	for range 3 {
		e := f.eventAt(t, s, t0)
		fanOut(t, s, e, t0, 0, nil) // no consumer: re-routable
		events = append(events, e)
	}
	handled := f.eventAt(t, s, t0) // pending: not re-routable
	sel := intake.BulkSelection{State: string(intake.EventNoConsumer), Type: "x.y", Match: `{"n":"1"}`, Words: []string{"a", "b"},
		Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour)}
	reroute := intake.ReplayJob{ID: intake.NewID(), OrgID: f.org.ID, Kind: intake.JobReroute, Selection: sel, Total: 4,
		CreatedAt: t0, UpdatedAt: t0}
	window := intake.ReplayJob{ID: intake.NewID(), OrgID: f.org.ID, EndpointID: f.ep.ID, Since: t0.Add(-time.Hour), Until: t0,
		Total: 1, CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}
	for _, j := range []intake.ReplayJob{reroute, window} {
		if err := s.CreateReplayJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ReplayJob(ctx, intake.Scope{OrgID: f.org.ID}, reroute.ID)
	if err != nil || got.Kind != intake.JobReroute || got.EndpointID != "" || !got.Since.IsZero() || got.Total != 4 ||
		got.Selection.State != sel.State || got.Selection.Type != sel.Type || got.Selection.Match != sel.Match ||
		!slices.Equal(got.Selection.Words, sel.Words) || !got.Selection.Since.Equal(sel.Since) || !got.Selection.Until.Equal(sel.Until) {
		t.Fatalf("re-route job reads as %+v, %v", got, err)
	}
	if got, err := s.ReplayJob(ctx, intake.Scope{}, window.ID); err != nil || got.Kind != intake.JobWindow {
		t.Fatalf("a job made without a kind reads as %+v, %v: want a window replay", got, err)
	}

	// The re-route was saved least recently: it is claimed first.
	a, ok, err := s.ClaimReplayJob(ctx, t0.Add(2*time.Second), time.Minute)
	if err != nil || !ok || a.ID != reroute.ID {
		t.Fatalf("claim = %+v %v %v, want the re-route", a, ok, err)
	}
	// A batch of the job: every event still re-routable goes back to
	// pending, the others are passed over, and the job records how many
	// with its cursor.
	a.Cursor = events[1].ID
	n, err := s.SaveJobBatch(ctx, a, intake.JobBatch{Reroute: []string{events[0].ID, events[1].ID, handled.ID}}, t0.Add(3*time.Second), 0)
	if err != nil || n != 2 {
		t.Fatalf("batch: %d, %v; want 2 re-routed", n, err)
	}
	for i, want := range []intake.EventState{intake.EventPending, intake.EventPending, intake.EventNoConsumer} {
		if st := eventState(t, s, events[i].ID); st != want {
			t.Errorf("event %d is %s, want %s", i, st, want)
		}
	}
	if got, _ := s.ReplayJob(ctx, intake.Scope{}, a.ID); got.Done != 2 || got.Cursor != events[1].ID || got.Finished() ||
		!got.UpdatedAt.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("after a batch the job reads as %+v", got)
	}
	// Saved with no lease left, the job waits behind the window replay,
	// saved less recently.
	w, ok, err := s.ClaimReplayJob(ctx, t0.Add(3*time.Second), time.Minute)
	if err != nil || !ok || w.ID != window.ID {
		t.Fatalf("claim after the batch = %+v %v %v, want the window replay", w, ok, err)
	}

	w.Done, w.FinishedAt = 1, t0.Add(3*time.Second)
	if err := s.SaveReplayJob(ctx, w, t0.Add(3*time.Second), time.Minute); err != nil {
		t.Fatal(err)
	}

	// The re-route's runner stalls; once its lease ends another takes the
	// job over, and the first one's batch writes nothing.
	a2, ok, err := s.ClaimReplayJob(ctx, t0.Add(4*time.Second), time.Minute)
	if err != nil || !ok || a2.ID != reroute.ID || a2.Done != 2 {
		t.Fatalf("second claim = %+v %v %v", a2, ok, err)
	}
	b, ok, err := s.ClaimReplayJob(ctx, t0.Add(2*time.Minute), time.Minute)
	if err != nil || !ok || b.ID != reroute.ID || b.Owner == a2.Owner {
		t.Fatalf("takeover = %+v %v %v", b, ok, err)
	}
	orig := f.ingest(t, s, `{"id":"evt_r"}`, t0)
	stale := f.message(`{"id":"evt_r"}`, t0)
	stale.ReplayOf = orig.ID
	a2.Cursor, a2.FinishedAt = events[2].ID, t0.Add(2*time.Minute)
	_, err = s.SaveJobBatch(ctx, a2, intake.JobBatch{Reroute: []string{events[2].ID}, Replays: []*intake.Message{stale}}, t0.Add(2*time.Minute), 0)
	wantCode(t, err, intake.ESTALE)
	if st := eventState(t, s, events[2].ID); st != intake.EventNoConsumer {
		t.Fatalf("a stale runner's batch re-routed an event: %s", st)
	}
	if _, err := s.Message(ctx, intake.Scope{}, stale.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("a stale runner's batch recorded a replay: %v", err)
	}
	// The new owner's batch records replays too, and ends the job.
	replay := f.message(`{"id":"evt_r"}`, t0)
	replay.ReplayOf = orig.ID
	b.Cursor, b.FinishedAt = events[2].ID, t0.Add(3*time.Minute)
	if n, err := s.SaveJobBatch(ctx, b, intake.JobBatch{Reroute: []string{events[2].ID}, Replays: []*intake.Message{replay}},
		t0.Add(3*time.Minute), time.Minute); err != nil || n != 2 {
		t.Fatalf("new owner's batch: %d, %v", n, err)
	}
	if m, err := s.Message(ctx, intake.Scope{}, replay.ID); err != nil || m.ReplayOf != orig.ID || m.State != intake.MessageQueued {
		t.Fatalf("replay = %+v %v", m, err)
	}
	if got, _ := s.ReplayJob(ctx, intake.Scope{OrgID: f.org.ID}, b.ID); !got.Finished() || got.Done != 4 || got.State() != "done" {
		t.Fatalf("finished job reads as %+v", got)
	}
	// A batch is of the job's own org: a replay of another's is refused.
	otherJob := intake.ReplayJob{ID: intake.NewID(), OrgID: other.org.ID, Kind: intake.JobReplay, Total: 1, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateReplayJob(ctx, otherJob); err != nil {
		t.Fatal(err)
	}
	o, ok, err := s.ClaimReplayJob(ctx, t0.Add(time.Hour), time.Minute)
	if err != nil || !ok || o.ID != otherJob.ID {
		t.Fatalf("claim of the other org's job = %+v %v %v", o, ok, err)
	}
	foreign := f.message(`{"id":"evt_r"}`, t0)
	foreign.ReplayOf = orig.ID
	_, err = s.SaveJobBatch(ctx, o, intake.JobBatch{Replays: []*intake.Message{foreign}}, t0.Add(time.Hour), 0)
	wantCode(t, err, intake.EINVALID)
}

// testJobsTakeTurnsOrgByOrg: the claim takes a job of the org whose jobs
// were saved least recently, so an org with many jobs gets no more turns
// than an org with one.
func testJobsTakeTurnsOrgByOrg(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s, "acme"), newFixture(t, s, "beta")
	job := func(org string, at time.Time) intake.ReplayJob {
		j := intake.ReplayJob{ID: intake.NewID(), OrgID: org, Kind: intake.JobReplay, Total: 10, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateReplayJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	a1, a2, b1 := job(a.org.ID, t0), job(a.org.ID, t0.Add(time.Second)), job(b.org.ID, t0.Add(2*time.Second))
	claim := func(at time.Time, want intake.ReplayJob, name string) intake.ReplayJob {
		t.Helper()
		j, ok, err := s.ClaimReplayJob(ctx, at, time.Minute)
		if err != nil || !ok || j.ID != want.ID {
			t.Fatalf("claim at %s = %s %v %v, want %s", at.Sub(t0), j.ID, ok, err, name)
		}
		return j
	}
	// acme's jobs were saved before beta's: acme's oldest goes first.
	j := claim(t0.Add(3*time.Second), a1, "acme's first job")
	j.Done = 1
	if err := s.SaveReplayJob(ctx, j, t0.Add(4*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	// Now beta's turn, though acme's second job was saved before it.
	claim(t0.Add(4*time.Second), b1, "beta's job")
	claim(t0.Add(5*time.Second), a2, "acme's second job")
}
