package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/intakehq/intake"
)

// BulkResult is what a bulk action did: took Count rows at once, or, for
// a search past the bulk maximum that the caller confirmed, recorded Job
// for a ReplayRunner to carry out in paced batches (Count is then 0).
type BulkResult struct {
	Count int
	Job   *intake.ReplayJob
}

// confirmHint ends the refusal of a bulk action past the bulk maximum.
const confirmHint = "narrow it (a type, a time range, a match), or confirm it (confirm: true; the CLI's --confirm) to run it as a paced job"

// startBulkJob records a bulk job of kind over sel, total rows counted
// now, with one audit entry for the whole job. A job runs in one org, so
// staff name the org they act for.
func (p *Plane) startBulkJob(ctx context.Context, c Caller, kind intake.JobKind, sel intake.BulkSelection, total int,
	action string) (intake.ReplayJob, error) {
	if c.Scope.OrgID == "" {
		return intake.ReplayJob{}, intake.Errorf(intake.EINVALID, "a bulk job runs in one org: act as the org whose rows it takes")
	}
	now := p.now()
	j := intake.ReplayJob{ID: intake.NewID(), OrgID: c.Scope.OrgID, Kind: kind, Selection: sel, Total: total, CreatedAt: now, UpdatedAt: now}
	search, err := selectionSearch(sel)
	if err != nil {
		return intake.ReplayJob{}, err
	}
	query := describeSearch(sel.State, sel.Type, sel.EndpointID, search, sel.Since, sel.Until)
	a := p.entry(c, j.OrgID, action, "job", j.ID, fmt.Sprintf("bulk job (search: %s) count=%d", query, total))
	return j, p.store.CreateReplayJob(ctx, j, a)
}

// eventSelection is what a re-route job keeps of f.
func eventSelection(f intake.EventFilter) intake.BulkSelection {
	return intake.BulkSelection{State: string(f.State), Type: f.Type, Match: f.Search.Match.String(), Words: f.Search.Words,
		Since: f.Since, Until: f.Until}
}

// messageSelection is what a replay job keeps of f.
func messageSelection(f intake.MessageFilter) intake.BulkSelection {
	return intake.BulkSelection{State: string(f.State), Type: f.Type, EndpointID: f.EndpointID, ProviderEventID: f.ProviderEventID,
		Match: f.Search.Match.String(), Words: f.Search.Words, Since: f.Since, Until: f.Until}
}

// jobBatch is one batch a bulk job's runner reads: the rows to write, the
// cursor after them, and whether they are the last.
type jobBatch struct {
	rows   intake.JobBatch
	cursor string
	end    bool
}

// readRerouteBatch reads the next batch of a re-route job: the events its
// search selects in each re-routable state in turn, from its cursor
// ("state/last id").
func (r *ReplayRunner) readRerouteBatch(ctx context.Context, j intake.ReplayJob) (jobBatch, error) {
	search, err := selectionSearch(j.Selection)
	if err != nil {
		return jobBatch{}, err
	}
	states := reroutable()
	if j.Selection.State != "" {
		states = []intake.EventState{intake.EventState(j.Selection.State)}
	}
	state, last, _ := strings.Cut(j.Cursor, "/")
	i := 0
	for i < len(states) && state != "" && string(states[i]) != state {
		i++
	}
	if i == len(states) {
		return jobBatch{}, fmt.Errorf("re-route job %s: cursor %q names no state it takes", j.ID, j.Cursor)
	}
	f := intake.EventFilter{State: states[i], Type: j.Selection.Type, Since: j.Selection.Since, Until: j.Selection.Until,
		Search: search, Limit: r.batch(), Cursor: last}
	var page intake.Page[intake.Event]
	err = r.read(ctx, j.OrgID, func(ctx context.Context) (err error) {
		page, err = r.Store.ListEvents(ctx, intake.Scope{OrgID: j.OrgID}, f)
		return err
	})
	if err != nil {
		return jobBatch{}, err
	}
	var b jobBatch
	for _, e := range page.Items {
		b.rows.Reroute = append(b.rows.Reroute, e.ID)
		last = e.ID
	}
	if page.NextCursor == "" {
		// This state is done: the next starts from its first page.
		i, last = i+1, ""
	}
	b.end = i == len(states)
	if !b.end {
		b.cursor = string(states[i]) + "/" + last
	}
	return b, nil
}

// readReplayBatch reads the next batch of a replay job: the originals its
// search, or its window of an endpoint, selects from its cursor (the last
// one read), each made into its replay. One whose body has expired is
// passed over by a search's job, its replay would only be dead again; a
// window's records it dead (body_expired), so the window's account is
// whole.
func (r *ReplayRunner) readReplayBatch(ctx context.Context, j intake.ReplayJob) (jobBatch, error) {
	var f intake.MessageFilter
	keepExpired := j.Kind == intake.JobWindow
	if keepExpired {
		f = windowFilter(j.EndpointID, j.Since, j.Until)
	} else {
		search, err := selectionSearch(j.Selection)
		if err != nil {
			return jobBatch{}, err
		}
		sel := j.Selection
		f = intake.MessageFilter{EndpointID: sel.EndpointID, State: intake.MessageState(sel.State), Since: sel.Since, Until: sel.Until,
			Originals: true, ProviderEventID: sel.ProviderEventID, Type: sel.Type, Search: search}
	}
	f.Limit, f.Cursor = r.batch(), j.Cursor
	var page intake.Page[intake.Message]
	err := r.read(ctx, j.OrgID, func(ctx context.Context) (err error) {
		page, err = r.Store.ListMessages(ctx, intake.Scope{OrgID: j.OrgID}, f)
		return err
	})
	if err != nil {
		return jobBatch{}, err
	}
	b := jobBatch{cursor: j.Cursor, end: page.NextCursor == ""}
	for _, orig := range page.Items {
		m, ok, err := replayOf(ctx, r.Store, r.Clock, orig, keepExpired)
		if err != nil {
			return jobBatch{}, err
		}
		if ok {
			b.rows.Replays = append(b.rows.Replays, &m)
		}
		b.cursor = orig.ID
	}
	return b, nil
}

// selectionSearch is the search a job's selection keeps, as ParseSearch
// read it when the job was made.
func selectionSearch(sel intake.BulkSelection) (intake.Search, error) {
	m, err := intake.ParseMatch(sel.Match)
	return intake.Search{Match: m, Words: sel.Words}, err
}

// runBulk carries out batches of a bulk job from its cursor: each read,
// made into rows, and written with the job's progress in one transaction
// while this runner holds the job, so a batch is never written twice. After
// r.batches() batches it lets the job go, for the next in turn.
func (r *ReplayRunner) runBulk(ctx context.Context, j intake.ReplayJob) error {
	read := r.readReplayBatch
	if j.Kind == intake.JobReroute {
		read = r.readRerouteBatch
	}
	for k := 1; ctx.Err() == nil; k++ {
		b, err := read(ctx, j)
		if err == nil {
			next := j
			next.Cursor = b.cursor
			if b.end {
				next.FinishedAt = r.Clock.Now().UTC()
			}
			lease := replayLease
			if k >= r.batches() {
				lease = 0 // its turn is over: any runner may take it next
			}
			var n int
			n, err = r.Store.SaveJobBatch(context.WithoutCancel(ctx), next, b.rows, r.Clock.Now(), lease)
			switch {
			case err == nil:
				next.Done += n
				j = next
				if b.end || k >= r.batches() {
					return nil
				}
				continue
			case intake.ErrorCode(err) == intake.ESTALE:
				return nil // another runner took the job over
			case intake.ErrorCode(err) == intake.ENOTFOUND && len(b.rows.Replays) > 0:
				continue // an original's body expired since it was read: read the batch again
			}
		}
		switch {
		case ctx.Err() != nil:
			// The process is stopping: the job is taken over from its
			// last batch once the lease ends.
			return nil
		case intake.ErrorCode(err) == intake.EBUSY:
			// The org is at its read budget: the job waits its next turn.
			if err := r.Store.SaveReplayJob(context.WithoutCancel(ctx), j, r.Clock.Now(), 0); intake.ErrorCode(err) != intake.ESTALE {
				return err
			}
			return nil
		}
		if r.Logger != nil {
			r.Logger.Error("bulk job stopped", "replay_id", j.ID, "kind", j.Kind, "err", err)
		}
		j.Error, j.FinishedAt = intake.ErrorMessage(err), r.Clock.Now().UTC()
		if err := r.Store.SaveReplayJob(context.WithoutCancel(ctx), j, r.Clock.Now(), replayLease); err != nil &&
			intake.ErrorCode(err) != intake.ESTALE {
			return err
		}
		return nil
	}
	return nil
}

// read runs a batch's read within the org's share of the operators' read
// budget and its deadline, as an operator's own read of the org would run.
func (r *ReplayRunner) read(ctx context.Context, org string, read func(context.Context) error) error {
	if r.reads == nil {
		return read(ctx)
	}
	release, err := r.reads.reads.Take(ctx, org, 1)
	if err != nil {
		return busyError(err)
	}
	defer release()
	rctx, cancel := context.WithTimeout(intake.OperatorRead(ctx), r.reads.deadline)
	defer cancel()
	err = read(rctx)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return intake.Errorf(intake.EUNAVAILABLE, "a batch of this job ran past the %s read deadline; make a narrower search", r.reads.deadline)
	}
	return err
}

// Runner is a ReplayRunner whose bulk jobs read within the plane's read
// budget, each org's within its own share.
func (p *Plane) Runner(logger *slog.Logger) *ReplayRunner {
	return &ReplayRunner{Store: p.store, Clock: p.clock, Logger: logger, reads: &p.budgets}
}
