// Package notify sends operational notifications (DESIGN §9): the notices
// settlements, ingress and the quota leave in the store, grouped by (org,
// topic, subject) into at most one notification per group per window, to
// each org's signed URL and Slack webhook, with retries of its own. The
// event pipeline never carries them.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/seal"
)

// Config wires a Notifier. Store and Sealer are required.
type Config struct {
	Store  intake.Notifications
	Sealer *seal.Sealer
	// Sender makes the calls, through the consumer address policy; nil: one
	// with the default policy.
	Sender   *delivery.Sender
	Clock    intake.Clock
	Interval time.Duration // between polls (default 5s)
	Window   time.Duration // at most one notification per group per Window (default 5m)
	Attempts int           // calls per notification and receiver before giving up (default 5)
	Backoff  time.Duration // wait after the first failed call, doubling (default 10s)
	Batch    int           // notices read at a time (default 500)
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
}

// Notifier turns notices into notifications. One process at a time runs it
// (serve leads it like the sweeper); its windows and retries are in memory.
type Notifier struct {
	cfg    Config
	groups map[group]*tally
	queue  []*outgoing
}

// group is what notices are counted by.
type group struct{ org, topic, subject string }

// tally is a group's window: when its last notification went out and the
// notices read since, not yet sent.
type tally struct {
	lastSent    time.Time
	count       int
	first, last time.Time
	detail      string // the latest notice's
}

// Notification is the JSON a notification URL receives.
type Notification struct {
	Type    string    `json:"type"`
	OrgID   string    `json:"org_id"`
	Subject string    `json:"subject"`
	Count   int       `json:"count"`
	FirstAt time.Time `json:"first_at"`
	LastAt  time.Time `json:"last_at"`
	Detail  string    `json:"detail"`
}

// outgoing is one notification on its way to the receivers still to take it.
type outgoing struct {
	id       string // webhook-id: the same on every retry
	n        Notification
	targets  []target
	attempts int
	nextAt   time.Time
}

type target struct {
	url    string
	secret string // "" for Slack: a readable message, unsigned
}

// New returns a notifier with defaults filled in.
func New(cfg Config) *Notifier {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.Sender == nil {
		cfg.Sender = delivery.NewSender(delivery.Options{Policy: delivery.DefaultPolicy(), UserAgent: "intake"})
	}
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Window == 0 {
		cfg.Window = 5 * time.Minute
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = 5
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 10 * time.Second
	}
	if cfg.Batch == 0 {
		cfg.Batch = 500
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Notifier{cfg: cfg, groups: map[group]*tally{}}
}

// Run polls every Interval until ctx ends.
func (n *Notifier) Run(ctx context.Context) error {
	t := time.NewTicker(n.cfg.Interval)
	defer t.Stop()
	for {
		if err := n.Poll(ctx); err != nil && ctx.Err() == nil {
			n.cfg.Logger.Error("notifier: poll failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads the unsent notices into their groups' windows, sends each
// group whose window is open, and retries the calls that are due.
func (n *Notifier) Poll(ctx context.Context) error {
	now := n.cfg.Clock.Now().UTC()
	settings := map[string]*intake.NotificationSettings{}
	for {
		notices, err := n.cfg.Store.UnsentNotices(ctx, n.cfg.Batch)
		if err != nil {
			return err
		}
		if err := n.take(ctx, now, notices, settings); err != nil {
			return err
		}
		if len(notices) < n.cfg.Batch {
			break
		}
	}
	for g, t := range n.groups {
		switch {
		case t.count > 0 && !now.Before(t.lastSent.Add(n.cfg.Window)):
			if err := n.enqueue(ctx, now, g, t, settings); err != nil {
				return err
			}
		case t.count == 0 && now.Sub(t.lastSent) > n.cfg.Window:
			delete(n.groups, g) // its window is over: the store remembers it
		}
	}
	n.send(ctx, now)
	return nil
}

// take counts notices into their groups and marks them taken: at now when
// the group's window is open (they go out in this poll), else at the
// window's last send, so the group's last send time stays where it was.
// Notices no one subscribed to are dropped.
func (n *Notifier) take(ctx context.Context, now time.Time, notices []intake.Notice, settings map[string]*intake.NotificationSettings) error {
	byGroup := map[group][]intake.Notice{}
	var order []group
	for _, no := range notices {
		g := group{no.OrgID, no.Topic, no.Subject}
		if byGroup[g] == nil {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], no)
	}
	for _, g := range order {
		ns := byGroup[g]
		ids := make([]string, len(ns))
		for i, no := range ns {
			ids[i] = no.ID
		}
		s, err := n.settings(ctx, g.org, settings)
		if err != nil {
			return err
		}
		if s == nil || !slices.Contains(s.Topics, g.topic) {
			if err := n.cfg.Store.MarkNoticesSent(ctx, ids, now); err != nil {
				return err
			}
			n.cfg.Metrics.Notifications.WithLabelValues("dropped").Add(float64(len(ids)))
			continue
		}
		t := n.groups[g]
		if t == nil {
			last, err := n.cfg.Store.LastSentNotice(ctx, g.org, g.topic, g.subject)
			if err != nil {
				return err
			}
			t = &tally{lastSent: last}
			n.groups[g] = t
		}
		at := now
		if now.Before(t.lastSent.Add(n.cfg.Window)) {
			at = t.lastSent
		}
		if err := n.cfg.Store.MarkNoticesSent(ctx, ids, at); err != nil {
			return err
		}
		for _, no := range ns {
			if t.count == 0 || no.At.Before(t.first) {
				t.first = no.At
			}
			if t.count == 0 || !no.At.Before(t.last) {
				t.last, t.detail = no.At, no.Detail
			}
			t.count++
		}
	}
	return nil
}

// settings returns an org's settings, read once per poll; nil if it has
// none.
func (n *Notifier) settings(ctx context.Context, org string, seen map[string]*intake.NotificationSettings) (*intake.NotificationSettings, error) {
	if s, ok := seen[org]; ok {
		return s, nil
	}
	s, err := n.cfg.Store.NotificationSettings(ctx, intake.Scope{}, org)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		seen[org] = nil
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	seen[org] = &s
	return &s, nil
}

// enqueue turns a group's window into one notification to the org's
// receivers and opens the next window.
func (n *Notifier) enqueue(ctx context.Context, now time.Time, g group, t *tally, settings map[string]*intake.NotificationSettings) error {
	s, err := n.settings(ctx, g.org, settings)
	if err != nil {
		return err
	}
	note := Notification{Type: g.topic, OrgID: g.org, Subject: g.subject, Count: t.count, FirstAt: t.first, LastAt: t.last, Detail: t.detail}
	t.lastSent, t.count, t.detail = now, 0, ""
	if s == nil || !slices.Contains(s.Topics, g.topic) {
		n.cfg.Metrics.Notifications.WithLabelValues("dropped").Inc()
		return nil
	}
	out := &outgoing{id: "ntf_" + intake.NewID(), n: note, nextAt: now}
	if s.URL != "" {
		secret, err := n.cfg.Sealer.NotificationSecret(*s)
		if err != nil {
			n.cfg.Logger.Error("notifier: cannot open the org's notification secret", "org_id", g.org, "err", err)
		} else {
			out.targets = append(out.targets, target{url: s.URL, secret: secret})
		}
	}
	slack, err := n.cfg.Sealer.NotificationSlackURL(*s)
	if err != nil {
		n.cfg.Logger.Error("notifier: cannot open the org's Slack URL", "org_id", g.org, "err", err)
	} else if slack != "" {
		out.targets = append(out.targets, target{url: slack})
	}
	if len(out.targets) == 0 {
		n.cfg.Metrics.Notifications.WithLabelValues("dropped").Inc()
		return nil
	}
	n.queue = append(n.queue, out)
	return nil
}

// send makes the calls that are due; a notification a receiver refused
// Attempts times is given up for that receiver.
func (n *Notifier) send(ctx context.Context, now time.Time) {
	kept := n.queue[:0]
	for _, out := range n.queue {
		if now.Before(out.nextAt) {
			kept = append(kept, out)
			continue
		}
		out.attempts++
		var failed []target
		for _, tg := range out.targets {
			r := n.call(ctx, out, tg, now)
			if r.Outcome != intake.DeliveryRetry {
				n.cfg.Metrics.Notifications.WithLabelValues("sent").Inc()
				continue
			}
			if out.attempts >= n.cfg.Attempts {
				n.cfg.Metrics.Notifications.WithLabelValues("given_up").Inc()
				n.cfg.Logger.Warn("notifier: gave up on a notification", "org_id", out.n.OrgID, "type", out.n.Type,
					"subject", out.n.Subject, "slack", tg.secret == "", "attempts", out.attempts, "err", r.Err)
				continue
			}
			n.cfg.Metrics.Notifications.WithLabelValues("failed").Inc()
			failed = append(failed, tg)
		}
		if len(failed) > 0 {
			out.targets = failed
			out.nextAt = now.Add(n.cfg.Backoff << (out.attempts - 1))
			kept = append(kept, out)
		}
	}
	clear(n.queue[len(kept):])
	n.queue = kept
}

func (n *Notifier) call(ctx context.Context, out *outgoing, tg target, now time.Time) delivery.Result {
	if tg.secret == "" {
		body, _ := json.Marshal(map[string]string{"text": SlackText(out.n)})
		return n.cfg.Sender.Post(ctx, tg.url, body, nil, now)
	}
	body, _ := json.Marshal(out.n)
	return n.cfg.Sender.SendBody(ctx, tg.url, []string{tg.secret}, out.id, body, http.Header{}, now)
}

// SlackText is a notification as a person reads it.
func SlackText(n Notification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*intake: %s* — %s (org %s)", n.Type, subjectLabel(n), n.OrgID)
	if n.Count == 1 {
		fmt.Fprintf(&b, "\nat %s", n.LastAt.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(&b, "\n%d times between %s and %s", n.Count, n.FirstAt.UTC().Format(time.RFC3339), n.LastAt.UTC().Format(time.RFC3339))
	}
	if n.Detail != "" {
		b.WriteString("\n" + n.Detail)
	}
	return b.String()
}

// subjectLabel names a notification's subject with what it is.
func subjectLabel(n Notification) string {
	switch n.Type {
	case intake.NoticeMessageDead, intake.NoticeSignatureFailures:
		return "endpoint " + n.Subject
	case intake.NoticeStorageQuota:
		return n.Subject
	}
	return "consumer " + n.Subject
}
