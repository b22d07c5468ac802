package intake

import (
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// TransformErrorPrefix begins the error of a delivery record whose
// consumer's transform failed at run time.
const TransformErrorPrefix = "transform_error: "

// Issue causes that are not a delivery's own failure name.
const (
	CauseTripped        = "tripped"
	CauseTransformError = "transform error"
	CauseFilterError    = "filter error"
	CauseSignature      = "signature does not verify"
	CauseBacklog        = "backlog"
)

// IssueWrite is an issue as a settle writes it: the row as decided, and
// how many failed calls (or requests) and distinct events (or messages)
// the settle adds to its counts. Counts are written as additions, so two
// settles of one subject that commit side by side both count.
type IssueWrite struct {
	Issue               Issue
	AddCount, AddEvents int64
}

// IssueItem is an event (or message) an issue touched, at its last
// failure: the issue's items, newest first.
type IssueItem struct {
	IssueID   string
	OrgID     string
	EventID   string
	MessageID string
	At        time.Time
}

// IssueItemKey names an issue's item: the issue and the event or message.
type IssueItemKey struct{ IssueID, ItemID string }

// IssueID is the id of the one issue of (org, kind, subject, cause): the
// same cause returning finds the same issue, whichever process sees it.
func IssueID(orgID string, kind IssueKind, subjectID, cause string) string {
	return uuid.NewSHA1(issueSpace, []byte(orgID+"\x00"+string(kind)+"\x00"+subjectID+"\x00"+cause)).String()
}

var issueSpace = uuid.MustParse("6f1c9f3e-2b7a-4d3e-9a51-0c6e2d7b8a14")

// deliveryFailureNames are the failure names a call records when no answer
// came (delivery's describe and connFailure), each its own cause.
var deliveryFailureNames = []string{
	"timeout", "connection refused", "connection reset", "host not found", "name resolution failed",
	"host unreachable", "network unreachable", "TLS handshake failed", "TLS certificate not trusted",
	"TLS certificate not valid for the host", "TLS certificate expired", "TLS certificate invalid",
	"malformed HTTP answer", "connection closed without an answer", "refused by the consumer address policy",
	"consumer secret cannot be opened", "consumer url cannot be opened", "canceled", "malformed answer",
}

// IssueCause names the issue a failed call belongs to: its kind (a
// transform error is a rule issue, every other failure a delivery issue)
// and its cause, from a small fixed set so that one cause is one issue: an
// answer by its status class ("consumer answered 5xx"), a failure without
// an answer by its name ("timeout", "connection refused"), a broker's
// refusal as "broker refused".
func IssueCause(d Delivery) (IssueKind, string) {
	switch {
	case strings.HasPrefix(d.Error, TransformErrorPrefix):
		return IssueRule, CauseTransformError
	case strings.HasPrefix(d.Error, FilterErrorPrefix):
		return IssueRule, CauseFilterError
	case d.StatusCode >= 100 && d.StatusCode <= 599:
		return IssueDelivery, "consumer answered " + strconv.Itoa(d.StatusCode/100) + "xx"
	}
	e := d.Error
	for _, name := range deliveryFailureNames {
		if e == name || strings.HasSuffix(e, ": "+name) || strings.HasPrefix(e, name+" ") || strings.Contains(e, "last connection error: "+name) {
			return IssueDelivery, name
		}
	}
	switch {
	case strings.Contains(e, "timeout"), strings.Contains(e, "did not acknowledge"), strings.Contains(e, "did not answer within"),
		strings.Contains(e, "stayed busy"):
		return IssueDelivery, "timeout"
	case strings.Contains(e, "refused"), strings.Contains(e, "answered"), strings.Contains(e, "does not exist"):
		return IssueDelivery, "broker refused"
	}
	return IssueDelivery, "delivery failed"
}

// issueBook decides a batch's issues: each failure or success in turn,
// seeing what those before it decided over what was read.
type issueBook struct {
	issues map[string]Issue // by id: as read, then as decided
	items  map[IssueItemKey]bool
	at     map[string]int // index in writes
	writes []IssueWrite
	added  []IssueItem
	// notices are the issue notices decided, in order.
	notices []Notice
}

func newIssueBook(read []Issue, items map[IssueItemKey]bool) *issueBook {
	b := &issueBook{issues: map[string]Issue{}, items: map[IssueItemKey]bool{}, at: map[string]int{}}
	for _, i := range read {
		b.issues[i.ID] = i
	}
	for k, v := range items {
		b.items[k] = v
	}
	return b
}

// issueFailure is one failure to count.
type issueFailure struct {
	OrgID, SubjectID, SubjectName string
	Kind                          IssueKind
	Cause, Error                  string
	// EventID or MessageID is the item the failure touched.
	EventID, MessageID string
	At                 time.Time
}

// fail counts f under its issue: opened at the cause's first failure,
// reopened (as the same issue) when it was resolved or dismissed.
func (b *issueBook) fail(f issueFailure) {
	id := IssueID(f.OrgID, f.Kind, f.SubjectID, f.Cause)
	at := f.At.UTC()
	i, found := b.issues[id]
	w := IssueWrite{AddCount: 1}
	if j, ok := b.at[id]; ok {
		w = b.writes[j]
		w.AddCount++
	}
	if !found {
		i = Issue{ID: id, OrgID: f.OrgID, Kind: f.Kind, Status: IssueOpen, Cause: f.Cause, FirstSeenAt: at, OpenedAt: at}
		if f.Kind == IssueRequest {
			i.ConnectionID = f.SubjectID
		} else {
			i.ConsumerID = f.SubjectID
		}
		b.notice(i, NoticeIssueOpened, f.SubjectName, f.Error, at)
	} else if i.Status == IssueResolved || i.Status == IssueDismissed {
		i.Status, i.OpenedAt, i.AcknowledgedAt, i.ResolvedAt = IssueOpen, at, time.Time{}, time.Time{}
		b.notice(i, NoticeIssueReopened, f.SubjectName, f.Error, at)
	}
	if f.SubjectName != "" {
		i.SubjectName = f.SubjectName
	}
	i.Count++
	i.LastSeenAt, i.LastError, i.UpdatedAt = at, f.Error, at
	item := f.EventID + f.MessageID
	if item != "" {
		i.SampleEventID, i.SampleMessageID = f.EventID, f.MessageID
		b.added = append(b.added, IssueItem{IssueID: id, OrgID: f.OrgID, EventID: f.EventID, MessageID: f.MessageID, At: at})
		if k := (IssueItemKey{id, item}); !b.items[k] {
			b.items[k] = true
			i.Events++
			w.AddEvents++
		}
	}
	b.put(i, w)
}

// succeed resolves the open or acknowledged issues of kind about subject
// (of cause only, when one is given).
func (b *issueBook) succeed(orgID string, kind IssueKind, subjectID, subjectName string, at time.Time, cause ...string) {
	for _, i := range b.issues {
		if i.OrgID != orgID || i.Kind != kind || i.ConsumerID+i.ConnectionID != subjectID ||
			(i.Status != IssueOpen && i.Status != IssueAcknowledged) || len(cause) > 0 && i.Cause != cause[0] {
			continue
		}
		i.Status, i.ResolvedAt, i.UpdatedAt = IssueResolved, at.UTC(), at.UTC()
		if subjectName != "" {
			i.SubjectName = subjectName
		}
		w := IssueWrite{}
		if j, ok := b.at[i.ID]; ok {
			w = b.writes[j]
		}
		b.notice(i, NoticeIssueResolved, subjectName, "", at.UTC())
		b.put(i, w)
	}
}

func (b *issueBook) put(i Issue, w IssueWrite) {
	b.issues[i.ID] = i
	w.Issue = i
	if j, ok := b.at[i.ID]; ok {
		b.writes[j] = w
		return
	}
	b.at[i.ID] = len(b.writes)
	b.writes = append(b.writes, w)
}

// notice leaves an issue's notice, naming its subject and cause. (An
// acknowledged issue counts without one: it only resolves.)
func (b *issueBook) notice(i Issue, topic, name, lastError string, at time.Time) {
	subject := "consumer"
	if i.Kind == IssueRequest {
		subject = "connection"
	}
	if name == "" {
		name = i.SubjectName
	}
	detail := string(i.Kind) + " issue of " + subject + " " + strconv.Quote(name) + ": " + i.Cause
	switch topic {
	case NoticeIssueOpened:
		detail += " (opened)"
	case NoticeIssueReopened:
		detail += " (reopened)"
	case NoticeIssueResolved:
		detail += " (resolved)"
	}
	if lastError != "" && lastError != i.Cause {
		detail += ": " + lastError
	}
	b.notices = append(b.notices, Notice{ID: NewID(), OrgID: i.OrgID, Topic: topic, Subject: i.ID, Detail: detail, At: at})
}

// DefaultIssueBacklogAge is how long a consumer's oldest due or held event
// may wait before its backlog is an issue.
const DefaultIssueBacklogAge = 15 * time.Minute

// ConsumerBacklog is a consumer whose oldest due or held waiting route
// became due at OldestAt.
type ConsumerBacklog struct {
	OrgID, ConsumerID, Name string
	OldestAt                time.Time
}

// BacklogRead is what the backlog check reads: the consumers late beyond
// the backlog age, and the backlog issues open or acknowledged.
type BacklogRead struct {
	Late   []ConsumerBacklog
	Issues []Issue
}

// DecideBacklogIssues opens (or reopens) the backlog issue of each late
// consumer that has none open, counting one each time it opens, and
// resolves those of consumers no longer late.
func DecideBacklogIssues(in BacklogRead, now time.Time, age time.Duration) ([]IssueWrite, []Notice) {
	b := newIssueBook(in.Issues, nil)
	late := map[string]bool{}
	for _, c := range in.Late {
		late[c.ConsumerID] = true
		id := IssueID(c.OrgID, IssueBacklog, c.ConsumerID, CauseBacklog)
		if i, ok := b.issues[id]; ok && (i.Status == IssueOpen || i.Status == IssueAcknowledged) {
			continue
		}
		b.fail(issueFailure{OrgID: c.OrgID, SubjectID: c.ConsumerID, SubjectName: c.Name, Kind: IssueBacklog, Cause: CauseBacklog,
			Error: "the oldest waiting event has waited since " + c.OldestAt.UTC().Format(time.RFC3339) + ", more than " + age.String(), At: now})
	}
	for _, i := range in.Issues {
		if i.Kind == IssueBacklog && !late[i.ConsumerID] {
			b.succeed(i.OrgID, IssueBacklog, i.ConsumerID, i.SubjectName, now)
		}
	}
	return b.writes, b.notices
}
