package intake

import "time"

// AuditEntry records one operator action: who did what to which row.
type AuditEntry struct {
	ID         string
	OrgID      string // "" for actions on no org (creating one is recorded under the new org)
	Actor      string // "staff" or "key:<prefix>"
	Action     string // e.g. "endpoint.update", "message.replay"
	TargetType string
	TargetID   string
	Detail     string // a short, secret-free description
	At         time.Time
}

// AuditFilter selects audit entries for listing.
type AuditFilter struct {
	Limit  int
	Cursor string
}
