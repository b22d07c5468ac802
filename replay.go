package intake

import "time"

// ReplayJob is an operator action on many rows, carried out in bounded
// batches: a window replay (every original message an endpoint received in
// [Since, Until), made again as new messages), or a bulk replay or re-route
// of more rows than a request takes at once (what Selection selects). The
// job lives in the store, so any process reports its progress and, should
// the process running it stop, another takes it over once its lease ends
// and goes on from Cursor.
type ReplayJob struct {
	ID         string
	OrgID      string
	Kind       JobKind // zero: JobWindow
	EndpointID string  // a window replay's endpoint
	Since      time.Time
	Until      time.Time
	// Selection is what a bulk job works through (JobReplay, JobReroute).
	Selection  BulkSelection
	Total      int    // rows selected when the job was made
	Done       int    // rows taken so far
	Cursor     string // where the job got to, in list order
	Error      string // why the job stopped, if it failed
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time // zero while the job runs
	LeaseUntil time.Time // the running process holds the job until then
	Owner      string    // the claim holding the lease: a fresh id per claim
}

// Finished reports whether the job has ended, done or failed.
func (j ReplayJob) Finished() bool { return !j.FinishedAt.IsZero() }

// State names where the job is: running, done or failed.
func (j ReplayJob) State() string {
	switch {
	case !j.Finished():
		return "running"
	case j.Error != "":
		return "failed"
	}
	return "done"
}

// JobKind is what a ReplayJob does.
type JobKind string

// The kinds of job.
const (
	JobWindow  JobKind = "window"  // replay an endpoint's window
	JobReplay  JobKind = "replay"  // replay the original messages a search selects
	JobReroute JobKind = "reroute" // re-route the events a search selects
)

// BulkSelection is the search a bulk job works through, kept with the job
// so that whichever runner takes it pages the same rows: a search of
// messages (JobReplay) or of events (JobReroute), as the API takes it.
// Match is the JSON object as ParseMatch gives it back.
type BulkSelection struct {
	State           string    `json:"state,omitempty"`
	Type            string    `json:"type,omitempty"`
	EndpointID      string    `json:"endpoint_id,omitempty"`
	ProviderEventID string    `json:"provider_event_id,omitempty"`
	Match           string    `json:"match,omitempty"`
	Words           []string  `json:"q,omitempty"`
	Since           time.Time `json:"since,omitzero"`
	Until           time.Time `json:"until,omitzero"`
}

// JobBatch is one batch of a bulk job's rows, written with the job's
// progress in one transaction: the events to re-route, or the replays to
// record.
type JobBatch struct {
	Reroute []string
	Replays []*Message
}

// RerouteOutcome judges one event's re-route in a bulk action from the
// error of its write: done, passed over (no longer re-routable, or gone
// since it was selected), or err, which stops the action.
func RerouteOutcome(err error) (done bool, stop error) {
	switch ErrorCode(err) {
	case "":
		return true, nil
	case ECONFLICT, ENOTFOUND:
		return false, nil
	}
	return false, err
}

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
