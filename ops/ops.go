// Package ops carries out operator actions (replay, re-route) for the
// admin API and the console alike, so both do exactly the same thing.
package ops

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/seal"
)

// MaxReplayWindow is the longest endpoint window one replay may cover.
const MaxReplayWindow = 7 * 24 * time.Hour

// replayBatch bounds how many messages one step of a window replay reads
// and commits, so a large window holds neither a transaction nor memory.
const replayBatch = 200

// Ops performs operator actions on a store.
type Ops struct {
	Store  intake.Store
	Sealer *seal.Sealer // opens and seals connection secrets
	Clock  intake.Clock
	Logger *slog.Logger

	mu   sync.Mutex
	jobs map[string]*ReplayJob
}

// ReplayMessage makes a new message from a stored one: same request,
// replay_of set, processed like any other but without deduplication. Its
// received_at is the original's, so signature timestamps still verify. If
// the body has expired, the new record is dead with body_expired.
func (o *Ops) ReplayMessage(ctx context.Context, sc intake.Scope, id string) (intake.Message, error) {
	orig, err := o.Store.Message(ctx, sc, id)
	if err != nil {
		return intake.Message{}, err
	}
	return o.replay(ctx, sc, orig)
}

func (o *Ops) replay(ctx context.Context, sc intake.Scope, orig intake.Message) (intake.Message, error) {
	now := o.Clock.Now()
	m := intake.Message{
		ID: intake.NewID(), OrgID: orig.OrgID, ConnectionID: orig.ConnectionID, EndpointID: orig.EndpointID,
		Method: orig.Method, Query: orig.Query, Digest: orig.Digest, ReceivedAt: orig.ReceivedAt,
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now, ReplayOf: orig.ID,
	}
	if orig.ReplayOf != "" {
		m.ReplayOf = orig.ReplayOf // always the message the provider sent
	}
	body, header, err := o.Store.MessageBody(ctx, sc, orig.ID)
	switch {
	case intake.ErrorCode(err) == intake.ENOTFOUND:
		m.State, m.BodyExpired = intake.MessageDead, true
		m.ErrorCode, m.ErrorMessage = intake.ErrCodeBodyExpired, "the original message's body has expired"
		m.NextAttemptAt = time.Time{}
	case err != nil:
		return intake.Message{}, err
	default:
		m.Body, m.Header = body, header
	}
	if err := o.Store.Ingest(ctx, &m); err != nil {
		return intake.Message{}, err
	}
	return m, nil
}

// ReplayJob is a window replay running in the background.
type ReplayJob struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"org_id"`
	EndpointID string    `json:"endpoint_id"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	Total      int       `json:"total"`
	done       atomic.Int64
	finished   atomic.Bool
	over       chan struct{}
	mu         sync.Mutex
	err        string
}

// ReplayProgress is a job's state as reported to operators.
type ReplayProgress struct {
	ID       string `json:"id"`
	Total    int    `json:"total"`
	Done     int    `json:"done"`
	Finished bool   `json:"finished"`
	Error    string `json:"error,omitempty"`
}

// Finished is closed when the job ends.
func (j *ReplayJob) Finished() <-chan struct{} { return j.over }

// Progress reports how far the job is.
func (j *ReplayJob) Progress() ReplayProgress {
	j.mu.Lock()
	defer j.mu.Unlock()
	return ReplayProgress{ID: j.ID, Total: j.Total, Done: int(j.done.Load()), Finished: j.finished.Load(), Error: j.err}
}

// ReplayWindow starts replaying every original message an endpoint received
// in [since, until), at most seven days, in the background in bounded
// batches. The job's Total is known when it returns.
func (o *Ops) ReplayWindow(ctx context.Context, sc intake.Scope, endpointID string, since, until time.Time) (*ReplayJob, error) {
	switch {
	case since.IsZero() || until.IsZero():
		return nil, intake.Errorf(intake.EINVALID, "since and until are required")
	case !since.Before(until):
		return nil, intake.Errorf(intake.EINVALID, "since must be before until")
	case until.Sub(since) > MaxReplayWindow:
		return nil, intake.Errorf(intake.EINVALID, "a replay window is at most 7 days; this one is %s", until.Sub(since).Round(time.Minute))
	}
	ep, err := o.Store.Endpoint(ctx, sc, endpointID)
	if err != nil {
		return nil, err
	}
	f := intake.MessageFilter{EndpointID: endpointID, Since: since, Until: until, Originals: true, Limit: replayBatch}
	total, err := o.Store.CountMessages(ctx, sc, f)
	if err != nil {
		return nil, err
	}
	job := &ReplayJob{ID: intake.NewID(), OrgID: ep.OrgID, EndpointID: endpointID, Since: since, Until: until, Total: total, over: make(chan struct{})}
	o.mu.Lock()
	if o.jobs == nil {
		o.jobs = map[string]*ReplayJob{}
	}
	o.jobs[job.ID] = job
	o.mu.Unlock()
	go o.runWindow(context.WithoutCancel(ctx), sc, f, job)
	return job, nil
}

func (o *Ops) runWindow(ctx context.Context, sc intake.Scope, f intake.MessageFilter, job *ReplayJob) {
	defer func() { job.finished.Store(true); close(job.over) }()
	for {
		page, err := o.Store.ListMessages(ctx, sc, f)
		if err != nil {
			o.fail(job, err)
			return
		}
		for _, m := range page.Items {
			if _, err := o.replay(ctx, sc, m); err != nil {
				o.fail(job, err)
				return
			}
			job.done.Add(1)
		}
		if page.NextCursor == "" {
			return
		}
		f.Cursor = page.NextCursor
	}
}

func (o *Ops) fail(job *ReplayJob, err error) {
	if o.Logger != nil {
		o.Logger.Error("replay window stopped", "job", job.ID, "err", err)
	}
	job.mu.Lock()
	job.err = intake.ErrorMessage(err)
	job.mu.Unlock()
}

// Job returns a window replay of this process visible in sc.
func (o *Ops) Job(ctx context.Context, sc intake.Scope, id string) (*ReplayJob, error) {
	o.mu.Lock()
	job := o.jobs[id]
	o.mu.Unlock()
	if job == nil {
		return nil, intake.Errorf(intake.ENOTFOUND, "replay %s not found", id)
	}
	if _, err := o.Store.Endpoint(ctx, sc, job.EndpointID); err != nil {
		return nil, intake.Errorf(intake.ENOTFOUND, "replay %s not found", id)
	}
	return job, nil
}

// Reroute takes one dead or no_consumer event back to pending.
func (o *Ops) Reroute(ctx context.Context, sc intake.Scope, id string) error {
	return o.Store.RerouteEvent(ctx, sc, id, o.Clock.Now())
}

// RerouteWhere re-routes every dead or no_consumer event f selects (f.State
// empty: both), a page at a time, and returns how many.
func (o *Ops) RerouteWhere(ctx context.Context, sc intake.Scope, f intake.EventFilter) (int, error) {
	states := []intake.EventState{intake.EventDead, intake.EventNoConsumer}
	if f.State != "" {
		if intake.CheckEventTransition(f.State, intake.EventPending) != nil {
			return 0, intake.Errorf(intake.EINVALID, "only dead or no_consumer events can be re-routed")
		}
		states = []intake.EventState{f.State}
	}
	n := 0
	for _, st := range states {
		g := f
		g.State, g.Limit, g.Cursor = st, 200, ""
		for {
			page, err := o.Store.ListEvents(ctx, sc, g)
			if err != nil {
				return n, err
			}
			for _, e := range page.Items {
				if err := o.Store.RerouteEvent(ctx, sc, e.ID, o.Clock.Now()); err != nil && intake.ErrorCode(err) != intake.ECONFLICT {
					return n, err
				}
				n++
			}
			if page.NextCursor == "" {
				break
			}
			g.Cursor = page.NextCursor
		}
	}
	return n, nil
}
