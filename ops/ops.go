// Package ops carries out operator actions (replay, re-route) for the
// admin API and the console alike, so both do exactly the same thing.
package ops

import (
	"context"
	"log/slog"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/seal"
)

// MaxReplayWindow is the longest endpoint window one replay may cover.
const MaxReplayWindow = 7 * 24 * time.Hour

// replayBatch bounds how many messages one step of a window replay reads
// and commits before it saves its progress, so a large window holds neither
// a transaction nor memory.
const replayBatch = 50

// Ops performs operator actions on a store.
type Ops struct {
	Store  intake.Store
	Sealer *seal.Sealer // opens and seals connection secrets
	Clock  intake.Clock
	Logger *slog.Logger
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

// replayLease is how long a runner holds a window replay between two saves
// of its progress; a runner that stops loses the job after that long.
const replayLease = 30 * time.Second

// ReplayWindow records a replay of every original message an endpoint
// received in [since, until), at most seven days, for a runner (RunReplays,
// on any process) to carry out in bounded batches. Total is counted now.
func (o *Ops) ReplayWindow(ctx context.Context, sc intake.Scope, endpointID string, since, until time.Time) (intake.ReplayJob, error) {
	switch {
	case since.IsZero() || until.IsZero():
		return intake.ReplayJob{}, intake.Errorf(intake.EINVALID, "since and until are required")
	case !since.Before(until):
		return intake.ReplayJob{}, intake.Errorf(intake.EINVALID, "since must be before until")
	case until.Sub(since) > MaxReplayWindow:
		return intake.ReplayJob{}, intake.Errorf(intake.EINVALID, "a replay window is at most 7 days; this one is %s", until.Sub(since).Round(time.Minute))
	}
	ep, err := o.Store.Endpoint(ctx, sc, endpointID)
	if err != nil {
		return intake.ReplayJob{}, err
	}
	total, err := o.Store.CountMessages(ctx, sc, windowFilter(endpointID, since, until))
	if err != nil {
		return intake.ReplayJob{}, err
	}
	now := o.Clock.Now().UTC()
	j := intake.ReplayJob{ID: intake.NewID(), OrgID: ep.OrgID, EndpointID: endpointID, Since: since, Until: until, Total: total,
		CreatedAt: now, UpdatedAt: now}
	return j, o.Store.CreateReplayJob(ctx, j)
}

func windowFilter(endpointID string, since, until time.Time) intake.MessageFilter {
	return intake.MessageFilter{EndpointID: endpointID, Since: since, Until: until, Originals: true, Limit: replayBatch}
}

// Job returns a window replay visible in sc, whichever process runs it.
func (o *Ops) Job(ctx context.Context, sc intake.Scope, id string) (intake.ReplayJob, error) {
	return o.Store.ReplayJob(ctx, sc, id)
}

// RunReplays carries out window replays until ctx ends, one at a time,
// looking for new ones every poll.
func (o *Ops) RunReplays(ctx context.Context, poll time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		ran, err := o.RunReplayOnce(ctx)
		if err != nil && o.Logger != nil && ctx.Err() == nil {
			o.Logger.Error("replay runner", "err", err)
		}
		if ran && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunReplayOnce claims one window replay and carries it out from where it
// got to, saving its progress after every batch, until it ends, its lease
// is lost or ctx ends. ran is false when no replay was waiting. A runner
// that stops mid-batch leaves that batch to be replayed again by the next:
// at most replayBatch messages are replayed twice.
func (o *Ops) RunReplayOnce(ctx context.Context) (ran bool, err error) {
	j, ok, err := o.Store.ClaimReplayJob(ctx, o.Clock.Now(), replayLease)
	if err != nil || !ok {
		return false, err
	}
	sc := intake.Scope{OrgID: j.OrgID}
	f := windowFilter(j.EndpointID, j.Since, j.Until)
	f.Cursor = j.Cursor
	for ctx.Err() == nil {
		page, err := o.Store.ListMessages(ctx, sc, f)
		if err == nil {
			for _, m := range page.Items {
				if _, err = o.replay(ctx, sc, m); err != nil {
					break
				}
				j.Done++
				j.Cursor = m.ID
			}
		}
		if err != nil && ctx.Err() != nil {
			// The process is stopping mid-batch: the job is not failed, it
			// is taken over from its last save once the lease ends.
			return true, nil
		}
		if err != nil {
			if o.Logger != nil {
				o.Logger.Error("replay window stopped", "replay_id", j.ID, "err", err)
			}
			j.Error = intake.ErrorMessage(err)
		}
		if err != nil || page.NextCursor == "" {
			j.FinishedAt = o.Clock.Now().UTC()
		}
		if err := o.Store.SaveReplayJob(context.WithoutCancel(ctx), j, o.Clock.Now(), replayLease); err != nil {
			if intake.ErrorCode(err) == intake.ESTALE {
				return true, nil // another runner took the job over
			}
			return true, err
		}
		if j.Finished() {
			return true, nil
		}
		f.Cursor = page.NextCursor
	}
	return true, nil
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
