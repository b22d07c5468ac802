package intake

import (
	"strings"
	"time"
)

// Consumer is an application's registration to receive events: which types,
// at which URL, signed with its own secret.
type Consumer struct {
	ID    string
	OrgID string
	Name  string
	App   string
	// URL is where its events go (DESIGN §12), as every read shows it:
	// a password it carries replaced by ***. SealedURL is the whole url,
	// sealed, when it carries credentials; deliveries use that.
	URL          string
	SealedURL    []byte
	EventTypes   []string // exact ("stripe.invoice.paid") or prefix ("stripe.invoice.*", "*")
	Completion   bool     // receives events about records its app initiated
	Enabled      bool
	SealedSecret []byte
	CreatedAt    time.Time
	// Filter is a CEL expression over the event, its request's headers and
	// query; when set, the consumer receives only the events it accepts.
	Filter string
	// Transform is JavaScript defining transform(event, context): what the
	// consumer receives instead of the envelope, or null to skip.
	Transform string
	// SealedOldSecret is the secret a rotation replaced; deliveries are
	// signed with it too, beside the new one, until OldSecretUntil.
	SealedOldSecret []byte
	OldSecretUntil  time.Time
	// Controls pace deliveries: pause, rate, concurrency, ordering, retry
	// schedule and circuit breaker (DESIGN §9).
	Controls Controls
	// Version counts the row's changes: an update is written only over the
	// version it read (compare-and-set), so two racing changes never lose
	// each other.
	Version int64
}

// SignsWithOld reports whether deliveries at now still carry a signature
// under the consumer's previous secret.
func (c *Consumer) SignsWithOld(now time.Time) bool {
	return len(c.SealedOldSecret) > 0 && now.Before(c.OldSecretUntil)
}

// ValidatePattern checks one event type pattern.
func ValidatePattern(p string) error {
	switch {
	case p == "*":
		return nil
	case p == "" || strings.ContainsAny(p, " \t\n"):
		return Errorf(EINVALID, "event type pattern %q is empty or has spaces", p)
	case strings.Contains(strings.TrimSuffix(p, ".*"), "*"):
		return Errorf(EINVALID, "event type pattern %q: * may only end a pattern, after a dot", p)
	}
	return nil
}

// MatchType reports whether an event type matches a pattern: exact, "*",
// or a prefix ending ".*" that matches whole segments ("stripe.invoice.*"
// matches "stripe.invoice.paid" but not "stripe.invoiceitem.created").
func MatchType(pattern, typ string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasSuffix(prefix, ".") && strings.HasPrefix(typ, prefix) && len(typ) > len(prefix)
	}
	return pattern == typ
}

// Wants reports whether the consumer's patterns match the event type.
func (c *Consumer) Wants(typ string) bool {
	for _, p := range c.EventTypes {
		if MatchType(p, typ) {
			return true
		}
	}
	return false
}

// SelectConsumers picks who receives an event: the enabled consumers of its
// org whose patterns match; when the event's subject names the app that
// initiated it, only that app's completion consumers.
func SelectConsumers(e *Event, all []Consumer) []Consumer {
	var out []Consumer
	for _, c := range all {
		if !c.Enabled || c.OrgID != e.OrgID || !c.Wants(e.Type) {
			continue
		}
		if e.Subject != nil && e.Subject.App != "" && (c.App != e.Subject.App || !c.Completion) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// SubjectLink says that a provider object (in one connection) is a record
// of an app, registered when the app created the object at the provider.
type SubjectLink struct {
	ID               string
	OrgID            string
	ConnectionID     string
	ProviderObjectID string
	App              string
	RecordID         string
	CreatedAt        time.Time
}

// Delivery outcomes.
const (
	DeliveryHandled = "handled"
	DeliveryIgnored = "ignored"
	// DeliveryRetry: the call failed and the route waits for its next
	// attempt (or for the breaker).
	DeliveryRetry = "retry"
	// DeliveryDead: the call failed and spent the consumer's last attempt;
	// the route is dead. A failed call, as retry is.
	DeliveryDead = "dead"
	// DeliveryFiltered: the consumer's filter declined the event (or its
	// transform skipped it); no call was made and no attempt spent.
	DeliveryFiltered = "filtered"
	// DeliveryHeld: the consumer was paused when the event was fanned out
	// to it; no call was made, and the route waits for its resume.
	DeliveryHeld = "held"
)

// DeliveryOutcomes lists every delivery outcome.
var DeliveryOutcomes = []string{DeliveryHandled, DeliveryIgnored, DeliveryRetry, DeliveryDead, DeliveryFiltered, DeliveryHeld}

// Delivery is one attempt of one event to one consumer.
type Delivery struct {
	ID         string
	OrgID      string
	EventID    string
	ConsumerID string
	Attempt    int
	Outcome    string
	StatusCode int
	Latency    time.Duration
	Error      string
	At         time.Time
	// MaxAttempts is the consumer's attempts in force when the call was
	// made (0 when not recorded): a later change of the consumer's retry
	// rewrites no delivery.
	MaxAttempts int
	// Response is what an HTTP consumer answered (nil for any other
	// destination, or when no answer came).
	Response *DeliveryResponse
}

// DeliveryResponse is an HTTP consumer's answer as kept (DESIGN §20): its
// status, the headers content-type and retry-after, and the first
// MaxResponseBody bytes of its body, as text when they are UTF-8, else
// base64.
type DeliveryResponse struct {
	Status  int
	Headers map[string]string
	Body    string
	// BodyEncoding is "text" or "base64".
	BodyEncoding  string
	BodyTruncated bool
}

// MaxResponseBody is how much of an answer's body a delivery keeps.
const MaxResponseBody = 4 << 10

// Failed reports whether the call failed: it will be retried, or it spent
// the consumer's last attempt.
func (d *Delivery) Failed() bool {
	return d.Outcome == DeliveryRetry || d.Outcome == DeliveryDead
}

// Succeeded reports whether the consumer is done with the event on this
// attempt: it handled or ignored it, or its filter declined it.
func (d *Delivery) Succeeded() bool {
	return d.Outcome == DeliveryHandled || d.Outcome == DeliveryIgnored || d.Outcome == DeliveryFiltered
}

// EventClaim is an event leased to a router for its fan-out.
type EventClaim struct {
	Event      Event
	Attempt    int
	LeaseUntil time.Time
	// Done names the consumers that already handled or ignored the event
	// (before a re-route); they are not called again.
	Done map[string]bool
}
