package intake

import (
	"strconv"
	"strings"
	"time"
)

// An issue groups the failures that share one cause in one org (DESIGN
// §20): a consumer answering 5xx, a consumer's transform erroring, a
// connection whose requests fail verification, a consumer's backlog ageing.
// It opens at its cause's first failure, counts every later one, resolves
// by itself when its subject succeeds again and reopens, as the same issue,
// when the cause returns. Issues are written in the transaction of the
// settle that saw the failure.

// IssueKind is what an issue is about.
type IssueKind string

// Issue kinds.
const (
	// IssueDelivery: a consumer's calls fail with one cause (consumer
	// answered 5xx, timeout, connection refused, tripped, …).
	IssueDelivery IssueKind = "delivery"
	// IssueRule: a consumer's filter or transform errors at run time.
	IssueRule IssueKind = "rule"
	// IssueRequest: a connection's requests fail verification or a
	// handshake.
	IssueRequest IssueKind = "request"
	// IssueBacklog: a consumer's oldest due or held event is older than
	// the server's backlog age.
	IssueBacklog IssueKind = "backlog"
)

// IssueKinds lists every issue kind.
var IssueKinds = []IssueKind{IssueDelivery, IssueRule, IssueRequest, IssueBacklog}

// IssueStatus is where an issue stands.
type IssueStatus string

// Issue statuses. An operator moves open ↔ acknowledged and either to
// dismissed; only the issue itself resolves (its subject succeeded) and
// reopens (its cause returned, also after a dismissal).
const (
	IssueOpen         IssueStatus = "open"
	IssueAcknowledged IssueStatus = "acknowledged"
	IssueResolved     IssueStatus = "resolved"
	IssueDismissed    IssueStatus = "dismissed"
)

// IssueStatuses lists every issue status.
var IssueStatuses = []IssueStatus{IssueOpen, IssueAcknowledged, IssueResolved, IssueDismissed}

// Notice topics of issues.
const (
	NoticeIssueOpened   = "issue.opened"
	NoticeIssueReopened = "issue.reopened"
	NoticeIssueResolved = "issue.resolved"
)

// Issue is one cause of trouble in one org.
type Issue struct {
	ID    string
	OrgID string
	Kind  IssueKind
	// Status is open, acknowledged, resolved or dismissed.
	Status IssueStatus
	// ConsumerID is the subject of a delivery, rule or backlog issue;
	// ConnectionID of a request issue.
	ConsumerID   string
	ConnectionID string
	// SubjectName is the consumer's or connection's name when the issue
	// was last seen.
	SubjectName string
	// Cause names the failure: for a delivery issue its name with a
	// status class ("consumer answered 5xx", "timeout", "connection
	// refused", "tripped", …). One issue per (org, kind, subject, cause).
	Cause string
	// Count is the failed calls (or requests) it holds; Events the
	// distinct events (or messages) they touched.
	Count, Events   int64
	FirstSeenAt     time.Time
	LastSeenAt      time.Time
	OpenedAt        time.Time
	AcknowledgedAt  time.Time
	ResolvedAt      time.Time
	LastError       string
	SampleEventID   string
	SampleMessageID string
	UpdatedAt       time.Time
}

// Key is the issue's place in its lists.
func (i Issue) Key() string { return i.ID }

// IssueQuery selects issues; zero fields select all.
type IssueQuery struct {
	Status       IssueStatus
	Kind         IssueKind
	ConsumerID   string
	ConnectionID string
	Cursor       string
	Limit        int
}

// CheckIssueStatus is the rule of an operator's hand on an issue: open ↔
// acknowledged, either to dismissed (setting the status it has already is
// no change). Only the issue itself resolves and reopens.
func CheckIssueStatus(from, to IssueStatus) error {
	switch to {
	case IssueOpen, IssueAcknowledged, IssueDismissed:
	case IssueResolved:
		return Errorf(EINVALID, "an issue resolves by itself, when its consumer or connection succeeds again; set open, acknowledged or dismissed")
	default:
		return Errorf(EINVALID, "status must be open, acknowledged or dismissed, not %q", to)
	}
	if from == to {
		return nil
	}
	if from != IssueOpen && from != IssueAcknowledged {
		return Errorf(EINVALID, "a %s issue cannot be set %s: it reopens by itself when its cause returns", from, to)
	}
	return nil
}

// IssueItemsQuery pages an issue's items, newest first.
type IssueItemsQuery struct {
	Cursor string
	Limit  int
}

// IssueCursor is the place after an issue in its lists: its last seen
// time (Unix microseconds) and its id.
func IssueCursor(i Issue) string { return timedCursor(i.LastSeenAt, i.ID) }

// IssueItemCursor is the place after an item in its issue's items.
func IssueItemCursor(it IssueItem) string { return timedCursor(it.At, it.EventID+it.MessageID) }

func timedCursor(t time.Time, id string) string {
	return strconv.FormatInt(t.UnixMicro(), 10) + "_" + id
}

// ParseTimedCursor reads an IssueCursor or an IssueItemCursor (ok false
// for ""); EINVALID if it is not one.
func ParseTimedCursor(c string) (at time.Time, id string, ok bool, err error) {
	if c == "" {
		return time.Time{}, "", false, nil
	}
	us, id, found := strings.Cut(c, "_")
	n, perr := strconv.ParseInt(us, 10, 64)
	if !found || perr != nil || !ValidID(id) {
		return time.Time{}, "", false, Errorf(EINVALID, "cursor %q is not one this list gave", c)
	}
	return time.UnixMicro(n).UTC(), id, true, nil
}
