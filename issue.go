package intake

import (
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
