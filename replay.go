package intake

import "time"

// ReplayJob is a window replay: every original message an endpoint received
// in [Since, Until), made again as new messages, in bounded batches. The job
// lives in the store, so any process reports its progress and, should the
// process running it stop, another takes it over once its lease ends and
// goes on from Cursor.
type ReplayJob struct {
	ID         string
	OrgID      string
	EndpointID string
	Since      time.Time
	Until      time.Time
	Total      int    // originals in the window when the job was made
	Done       int    // replayed so far
	Cursor     string // the last original replayed, in list order
	Error      string // why the job stopped, if it failed
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time // zero while the job runs
	LeaseUntil time.Time // the running process holds the job until then
	Owner      string    // the claim holding the lease: a fresh id per claim
}

// Finished reports whether the job has ended, done or failed.
func (j ReplayJob) Finished() bool { return !j.FinishedAt.IsZero() }

// CheckReplay holds a replay record to what a replay may be: a new message
// with replay_of set, either queued with the original's request, or dead
// with body_expired when the original's body is gone.
func CheckReplay(m *Message) error {
	switch {
	case m.ReplayOf == "":
		return Errorf(EINVALID, "a replay names the message it replays")
	case m.State == MessageQueued && !m.BodyExpired:
		return nil
	case m.State == MessageDead && m.BodyExpired && m.ErrorCode == ErrCodeBodyExpired:
		return nil
	}
	return Errorf(EINVALID, "a replay is queued, or dead with %s; not %s", ErrCodeBodyExpired, m.State)
}
