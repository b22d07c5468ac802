package control

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/intakehq/intake"
)

// MaxReplayWindow is the longest endpoint window one replay may cover.
const MaxReplayWindow = 7 * 24 * time.Hour

// replayBatch bounds how many messages one step of a window replay reads
// and commits before it saves its progress, so a large window holds neither
// a transaction nor memory.
const replayBatch = 50

// ReplayMessage makes a new message from a stored one: same request,
// replay_of set, processed like any other but without deduplication. Its
// received_at is the original's, so signature timestamps still verify. If
// the body has expired, the new record is dead with body_expired.
func (p *Plane) ReplayMessage(ctx context.Context, c Caller, id string) (intake.Message, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return intake.Message{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Message{}, err
	}
	orig, err := p.store.Message(ctx, c.Scope, id)
	if err != nil {
		return intake.Message{}, err
	}
	return replay(ctx, p.store, p.clock, orig, true, func(m intake.Message) []intake.AuditEntry {
		return []intake.AuditEntry{p.entry(c, orig.OrgID, "message.replay", "message", orig.ID, "replay=", m.ID)}
	})
}

// ReplayDead replays every dead message f selects whose body is still kept
// (a replay of one whose body expired would only be dead again), at most
// the bulk maximum, and returns how many.
func (p *Plane) ReplayDead(ctx context.Context, c Caller, f intake.MessageFilter) (int, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return 0, err
	}
	f.State, f.Limit, f.Cursor = intake.MessageDead, 200, ""
	if err := checkMessageFilter(f); err != nil {
		return 0, err
	}
	n := 0
	for n < p.budgets.bulkMax {
		page, err := p.store.ListMessages(ctx, c.Scope, f)
		if err != nil {
			return n, err
		}
		for _, m := range page.Items {
			if m.BodyExpired || m.ErrorCode == intake.ErrCodeBodyExpired || n >= p.budgets.bulkMax {
				continue
			}
			r, err := replay(ctx, p.store, p.clock, m, false, func(r intake.Message) []intake.AuditEntry {
				return []intake.AuditEntry{p.entry(c, m.OrgID, "message.replay", "message", m.ID, "replay=", r.ID, " (dead letters)")}
			})
			if err != nil {
				return n, err
			}
			if r.ID != "" {
				n++
			}
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	return n, nil
}

// replay records a new message from orig, with the audit entries audit
// makes for it, in one transaction. When orig's body has expired it
// records the replay dead with body_expired, or, unless keepExpired,
// records nothing and returns the zero Message.
func replay(ctx context.Context, st intake.History, clock intake.Clock, orig intake.Message, keepExpired bool,
	audit func(intake.Message) []intake.AuditEntry) (intake.Message, error) {
	m, ok, err := replayOf(ctx, st, clock, orig, keepExpired)
	if err != nil || !ok {
		return intake.Message{}, err
	}
	err = st.InsertReplay(ctx, &m, audit(m)...)
	if intake.ErrorCode(err) == intake.ENOTFOUND && m.BlobKey != "" {
		// The original's body (its object) expired since it was read.
		expired(&m)
		err = st.InsertReplay(ctx, &m, audit(m)...)
	}
	if err != nil {
		return intake.Message{}, err
	}
	return m, nil
}

// replayOf makes the replay of orig, with orig's request. When orig's body
// has expired the replay is dead with body_expired, or, unless
// keepExpired, there is none (ok false).
func replayOf(ctx context.Context, st intake.History, clock intake.Clock, orig intake.Message, keepExpired bool) (m intake.Message, ok bool, err error) {
	now := clock.Now()
	m = intake.Message{
		ID: intake.NewID(), OrgID: orig.OrgID, ConnectionID: orig.ConnectionID, EndpointID: orig.EndpointID,
		Method: orig.Method, Query: orig.Query, Digest: orig.Digest, ReceivedAt: orig.ReceivedAt,
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now, ReplayOf: orig.ID,
	}
	if orig.ReplayOf != "" {
		m.ReplayOf = orig.ReplayOf // always the message the provider sent
	}
	sc := intake.Scope{OrgID: orig.OrgID}
	b, err := st.MessageBody(ctx, sc, orig.ID)
	switch {
	case intake.ErrorCode(err) == intake.ENOTFOUND && !keepExpired:
		return intake.Message{}, false, nil
	case intake.ErrorCode(err) == intake.ENOTFOUND:
		expired(&m)
	case err != nil:
		return intake.Message{}, false, err
	default:
		// A body in object storage is not copied: the replay names the
		// same object, which is deleted only once no body names it.
		m.Body, m.BlobKey, m.Header = b.Body, b.BlobKey, b.Header
	}
	return m, true, nil
}

// expired makes m the replay of a message whose body has expired: dead
// at once, with no body.
func expired(m *intake.Message) {
	m.State, m.BodyExpired = intake.MessageDead, true
	m.ErrorCode, m.ErrorMessage = intake.ErrCodeBodyExpired, "the original message's body has expired"
	m.NextAttemptAt, m.Body, m.BlobKey, m.Header = time.Time{}, nil, "", nil
}

// ReplayWindow records a replay of every original message an endpoint
// received in [since, until), at most seven days, for a ReplayRunner (on
// any process) to carry out in bounded batches. Total is counted now.
func (p *Plane) ReplayWindow(ctx context.Context, c Caller, endpointID string, since, until time.Time) (intake.ReplayJob, error) {
	ep, total, err := p.checkReplayWindow(ctx, c, endpointID, since, until)
	if err != nil {
		return intake.ReplayJob{}, err
	}
	now := p.now()
	j := intake.ReplayJob{ID: intake.NewID(), OrgID: ep.OrgID, EndpointID: endpointID, Since: since, Until: until, Total: total,
		CreatedAt: now, UpdatedAt: now}
	a := p.entry(c, ep.OrgID, "endpoint.replay", "endpoint", endpointID, fmt.Sprintf("since=%s until=%s count=%d",
		since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), total))
	return j, p.store.CreateReplayJob(ctx, j, a)
}

// PreviewReplayWindow is ReplayWindow's dry run: how many messages it
// would replay and the first of them; nothing changes.
func (p *Plane) PreviewReplayWindow(ctx context.Context, c Caller, endpointID string, since, until time.Time) (Preview[intake.Message], error) {
	_, total, err := p.checkReplayWindow(ctx, c, endpointID, since, until)
	if err != nil {
		return Preview[intake.Message]{}, err
	}
	f := windowFilter(endpointID, since, until)
	f.Limit = PreviewItems
	page, err := p.store.ListMessages(ctx, c.Scope, f)
	return Preview[intake.Message]{Count: total, Items: page.Items}, err
}

// checkReplayWindow checks a window replay and counts the messages it
// takes.
func (p *Plane) checkReplayWindow(ctx context.Context, c Caller, endpointID string, since, until time.Time) (intake.Endpoint, int, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return intake.Endpoint{}, 0, err
	}
	if err := intake.CheckID("id", endpointID); err != nil {
		return intake.Endpoint{}, 0, err
	}
	if err := checkRange(since, until); err != nil {
		return intake.Endpoint{}, 0, err
	}
	if until.Sub(since) > MaxReplayWindow {
		return intake.Endpoint{}, 0, intake.Errorf(intake.EINVALID, "a replay window is at most 7 days; this one is %s", until.Sub(since).Round(time.Minute))
	}
	ep, err := p.store.Endpoint(ctx, c.Scope, endpointID)
	if err != nil {
		return intake.Endpoint{}, 0, err
	}
	total, err := p.store.CountMessages(ctx, c.Scope, windowFilter(endpointID, since, until))
	return ep, total, err
}

func windowFilter(endpointID string, since, until time.Time) intake.MessageFilter {
	return intake.MessageFilter{EndpointID: endpointID, Since: since, Until: until, Originals: true, Limit: replayBatch}
}

// ReplayJob returns a window replay visible to the caller, whichever
// process runs it.
func (p *Plane) ReplayJob(ctx context.Context, c Caller, id string) (intake.ReplayJob, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.ReplayJob{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.ReplayJob{}, err
	}
	return p.store.ReplayJob(ctx, c.Scope, id)
}

// replayLease is how long a runner holds a window replay between two saves
// of its progress; a runner that stops loses the job after that long.
const replayLease = 30 * time.Second

// ReplayStore is what a ReplayRunner uses.
type ReplayStore interface {
	intake.ReplayJobs
	intake.History
}

// ReplayRunner carries out window replays and bulk jobs, one at a time;
// every process runs one, and a job whose runner stopped is taken over
// where it got to. Jobs take turns: a runner works Batches batches of one,
// then lets it go and takes the job saved least recently, so that one
// org's long job never holds another org's up.
type ReplayRunner struct {
	Store  ReplayStore
	Clock  intake.Clock
	Logger *slog.Logger
	Poll   time.Duration // how often to look for a new job (default 1s)
	// Batch is how many rows a batch of a bulk job takes (default 50);
	// Batches how many batches of one job a runner works in its turn
	// (default 20).
	Batch, Batches int
	// reads, when set, bounds bulk jobs' reads as the plane bounds the
	// org's own (Plane.Runner).
	reads *budgets
}

func (r *ReplayRunner) batch() int   { return cmp.Or(r.Batch, replayBatch) }
func (r *ReplayRunner) batches() int { return cmp.Or(r.Batches, 20) }

// Run carries out window replays until ctx ends.
func (r *ReplayRunner) Run(ctx context.Context) error {
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		ran, err := r.RunOnce(ctx)
		if err != nil && r.Logger != nil && ctx.Err() == nil {
			r.Logger.Error("replay runner", "err", err)
		}
		if ran && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce claims one job and carries out its turn from where it got to
// (runBulk): each batch written with the job's progress in one
// transaction, until the job ends, its turn ends, its lease is lost or ctx
// ends. ran is false when no job was waiting. A runner that stops
// mid-batch wrote none of it: the next takes the job over from its last
// batch, and no row is written twice.
func (r *ReplayRunner) RunOnce(ctx context.Context) (ran bool, err error) {
	j, ok, err := r.Store.ClaimReplayJob(ctx, r.Clock.Now(), replayLease)
	if err != nil || !ok {
		return false, err
	}
	return true, r.runBulk(ctx, j)
}
