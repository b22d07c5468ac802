package intake

import (
	"context"
	"time"
)

// Notice is an operational notification waiting to be sent (DESIGN §9):
// written in the transaction of the change it reports.
type Notice struct {
	ID      string
	OrgID   string
	Topic   string // message.dead, event.dead, consumer.tripped, …
	Subject string // what it is about: a consumer, event, message or endpoint id
	Detail  string
	At      time.Time
}

// Notification topics.
const (
	NoticeMessageDead       = "message.dead"
	NoticeEventDead         = "event.dead"
	NoticeConsumerTripped   = LaneTripped
	NoticeConsumerRecovered = LaneRecovered
	NoticeConsumerDisabled  = LaneDisabled
	NoticeSignatureFailures = "signature.failures"
	NoticeStorageQuota      = "storage.quota"
	// NoticeSchemaChanged: an event type's shape drifted (its subject is
	// the connection id and the type, as "connection/type").
	NoticeSchemaChanged = "schema.changed"
)

// NoticeTopics lists every notification topic.
var NoticeTopics = []string{NoticeMessageDead, NoticeEventDead, NoticeConsumerTripped, NoticeConsumerRecovered,
	NoticeConsumerDisabled, NoticeSignatureFailures, NoticeStorageQuota, NoticeSchemaChanged,
	NoticeIssueOpened, NoticeIssueReopened, NoticeIssueResolved}

// NotificationSettings is where an org's operational notifications go.
type NotificationSettings struct {
	OrgID string
	// URL is where notifications are posted, its credentials shown as ***
	// (redact.URL); SealedURL holds it whole when it carries any.
	URL            string
	SealedURL      []byte
	SealedSlackURL []byte
	Topics         []string
	SealedSecret   []byte
	UpdatedAt      time.Time
	// Version counts the settings' changes. A put with version 0 makes
	// the org's first settings; any other is written only over that
	// version (EVERSION otherwise).
	Version int64
}

// Notifications keeps where notices go and the notices waiting to be sent.
type Notifications interface {
	// PutNotificationSettings writes an org's settings over s.Version
	// (0: the org has none yet); EVERSION when they are not at it.
	PutNotificationSettings(ctx context.Context, sc Scope, s NotificationSettings, audit ...AuditEntry) error
	// NotificationSettings returns the org's settings; ENOTFOUND if it has
	// none.
	NotificationSettings(ctx context.Context, sc Scope, orgID string) (NotificationSettings, error)
	// InsertNotice records a notice outside a settle (ingress, the quota).
	InsertNotice(ctx context.Context, n Notice) error
	// UnsentNotices returns up to limit notices not yet sent, oldest first.
	UnsentNotices(ctx context.Context, limit int) ([]Notice, error)
	// LastSentNotice returns when a notice of (org, topic, subject) was
	// last sent; zero if never.
	LastSentNotice(ctx context.Context, orgID, topic, subject string) (time.Time, error)
	MarkNoticesSent(ctx context.Context, ids []string, at time.Time) error
	// SubjectNames names the consumers, connections and endpoints among
	// ids (deleted ones too), so notices read by name; ids that name none
	// of them are left out.
	SubjectNames(ctx context.Context, ids []string) (map[string]SubjectName, error)
}

// SubjectName is what a notice's subject id names, as people read it.
type SubjectName struct {
	OrgID string
	Kind  string // SubjectConsumer, SubjectConnection or SubjectEndpoint
	Name  string // "" for an unnamed endpoint
	// ConnectionID and ConnectionName are an endpoint's connection.
	ConnectionID, ConnectionName string
}

// What a notice's subject may name.
const (
	SubjectConsumer   = "consumer"
	SubjectConnection = "connection"
	SubjectEndpoint   = "endpoint"
)
