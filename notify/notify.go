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
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/fair"
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
	// MaxInFlight bounds the calls in flight at once (default 32);
	// MaxInFlightPerOrg bounds one org's calls (default 4), and so does
	// its fair share of MaxInFlight beside the orgs with calls in flight
	// (internal/fair), so the next org finds a slot however many are busy.
	MaxInFlight       int
	MaxInFlightPerOrg int
	Metrics           *metrics.Metrics
	Logger            *slog.Logger
}

// Notifier turns notices into notifications. One process at a time runs it
// (serve leads it like the sweeper); its windows and retries are in memory.
//
// Each receiver (an org's URL or Slack webhook) has its own line and takes
// one call at a time, so a receiver that hangs holds one slot and delays
// only its own notifications; the slots are handed out to orgs in turn.
type Notifier struct {
	cfg    Config
	groups map[group]*tally // only Poll's goroutine touches the windows

	mu       sync.Mutex
	lines    map[receiver]*line
	inFlight int
	byOrg    map[string]int    // calls in flight per org
	served   map[string]uint64 // per org with a line: seq when a call to it last started
	seq      uint64
	idle     *sync.Cond // signalled when inFlight drops to 0
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

// Notification is the JSON a notification URL receives. Subject is an id
// (a consumer's, an endpoint's, …). When it is a consumer's, a
// connection's or an endpoint's, SubjectKind says which and SubjectName
// names it; ConnectionID and ConnectionName give an endpoint's or an event
// type's connection.
type Notification struct {
	Type           string    `json:"type"`
	OrgID          string    `json:"org_id"`
	Subject        string    `json:"subject"`
	SubjectKind    string    `json:"subject_kind,omitempty"`
	SubjectName    string    `json:"subject_name,omitempty"`
	ConnectionID   string    `json:"connection_id,omitempty"`
	ConnectionName string    `json:"connection_name,omitempty"`
	Count          int       `json:"count"`
	FirstAt        time.Time `json:"first_at"`
	LastAt         time.Time `json:"last_at"`
	Detail         string    `json:"detail"`
}

// receiver is where an org's notifications go: its URL or its Slack
// webhook.
type receiver struct{ org, url string }

// line is a receiver's queue: the notifications it has still to take,
// and whether a call to it is in flight.
type line struct {
	pending []*outgoing
	busy    bool
}

// outgoing is one notification on its way to one receiver.
type outgoing struct {
	id       string // webhook-id: the same on every retry
	n        Notification
	secret   string // "" for Slack: a readable message, unsigned
	attempts int
	nextAt   time.Time
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
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 32
	}
	if cfg.MaxInFlightPerOrg == 0 {
		cfg.MaxInFlightPerOrg = 4
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{cfg: cfg, groups: map[group]*tally{}, lines: map[receiver]*line{}, byOrg: map[string]int{},
		served: map[string]uint64{}}
	n.idle = sync.NewCond(&n.mu)
	return n
}

// Run polls every Interval until ctx ends, then waits for the calls in
// flight, which end with it.
func (n *Notifier) Run(ctx context.Context) error {
	t := time.NewTicker(n.cfg.Interval)
	defer t.Stop()
	for {
		if err := n.Poll(ctx); err != nil && ctx.Err() == nil {
			n.cfg.Logger.Error("notifier: poll failed", "err", err)
		}
		select {
		case <-ctx.Done():
			n.Wait()
			return nil
		case <-t.C:
		}
	}
}

// Poll reads the unsent notices into their groups' windows, queues each
// group whose window is open for its receivers, and starts the calls that
// are due; it does not wait for them (Wait does). The calls run under ctx.
// One goroutine at a time polls.
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
	var due []group
	for g, t := range n.groups {
		switch {
		case t.count > 0 && !now.Before(t.lastSent.Add(n.cfg.Window)):
			due = append(due, g)
		case t.count == 0 && now.Sub(t.lastSent) > n.cfg.Window:
			delete(n.groups, g) // its window is over: the store remembers it
		}
	}
	names := n.names(ctx, due)
	for _, g := range due {
		if err := n.enqueue(ctx, now, g, n.groups[g], settings, names); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.dispatch(ctx)
	n.mu.Unlock()
	return nil
}

// Wait returns once no call is in flight.
func (n *Notifier) Wait() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.inFlight > 0 {
		n.idle.Wait()
	}
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

// subjectID is the id a group's subject holds: a schema change's is
// "connection/type".
func subjectID(g group) string {
	if g.topic == intake.NoticeSchemaChanged {
		conn, _, _ := strings.Cut(g.subject, "/")
		return conn
	}
	return g.subject
}

// names reads the names of the groups' subjects in one call. Without them
// notifications still go, naming ids alone.
func (n *Notifier) names(ctx context.Context, groups []group) map[string]intake.SubjectName {
	if len(groups) == 0 {
		return nil
	}
	ids := make([]string, 0, len(groups))
	for _, g := range groups {
		ids = append(ids, subjectID(g))
	}
	slices.Sort(ids)
	names, err := n.cfg.Store.SubjectNames(ctx, slices.Compact(ids))
	if err != nil {
		n.cfg.Logger.Warn("notifier: cannot read the subjects' names; naming them by id", "err", err)
	}
	return names
}

// enqueue turns a group's window into one notification to the org's
// receivers and opens the next window.
func (n *Notifier) enqueue(ctx context.Context, now time.Time, g group, t *tally, settings map[string]*intake.NotificationSettings,
	names map[string]intake.SubjectName) error {
	s, err := n.settings(ctx, g.org, settings)
	if err != nil {
		return err
	}
	note := Notification{Type: g.topic, OrgID: g.org, Subject: g.subject, Count: t.count, FirstAt: t.first, LastAt: t.last, Detail: t.detail}
	if name, ok := names[subjectID(g)]; ok && name.OrgID == g.org {
		note.SubjectKind = name.Kind
		switch name.Kind {
		case intake.SubjectConnection:
			note.ConnectionID, note.ConnectionName = subjectID(g), name.Name
			if g.topic != intake.NoticeSchemaChanged {
				note.SubjectName = name.Name
			}
		case intake.SubjectEndpoint:
			note.SubjectName, note.ConnectionID, note.ConnectionName = name.Name, name.ConnectionID, name.ConnectionName
		default:
			note.SubjectName = name.Name
		}
	}
	t.lastSent, t.count, t.detail = now, 0, ""
	if s == nil || !slices.Contains(s.Topics, g.topic) {
		n.cfg.Metrics.Notifications.WithLabelValues("dropped").Inc()
		return nil
	}
	id := "ntf_" + intake.NewID()
	n.mu.Lock()
	defer n.mu.Unlock()
	queued := false
	if s.URL != "" {
		secret, err := n.cfg.Sealer.NotificationSecret(*s)
		dest, uerr := n.cfg.Sealer.NotificationURL(*s)
		switch {
		case err != nil:
			n.cfg.Logger.Error("notifier: cannot open the org's notification secret", "org_id", g.org, "err", err)
		case uerr != nil:
			n.cfg.Logger.Error("notifier: cannot open the org's notification URL", "org_id", g.org, "err", uerr)
		default:
			n.queue(receiver{g.org, dest}, &outgoing{id: id, n: note, secret: secret, nextAt: now})
			queued = true
		}
	}
	slack, err := n.cfg.Sealer.NotificationSlackURL(*s)
	if err != nil {
		n.cfg.Logger.Error("notifier: cannot open the org's Slack URL", "org_id", g.org, "err", err)
	} else if slack != "" {
		n.queue(receiver{g.org, slack}, &outgoing{id: id, n: note, nextAt: now})
		queued = true
	}
	if !queued {
		n.cfg.Metrics.Notifications.WithLabelValues("dropped").Inc()
	}
	return nil
}

// queue puts out at the end of r's line. n.mu is held.
func (n *Notifier) queue(r receiver, out *outgoing) {
	l := n.lines[r]
	if l == nil {
		l = &line{}
		n.lines[r] = l
	}
	l.pending = append(l.pending, out)
}

// dispatch starts the calls that are due and fit the bounds: one per idle
// receiver, at most MaxInFlight in all and orgShare per org, the
// org served longest ago first, so a busy org's backlog never stands in
// front of another org's notification. n.mu is held.
func (n *Notifier) dispatch(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	now := n.cfg.Clock.Now().UTC()
	for n.inFlight < n.cfg.MaxInFlight {
		r, out := n.next(now)
		if out == nil {
			return
		}
		n.seq++
		n.served[r.org] = n.seq
		n.start(ctx, r, out, now)
	}
}

// next picks the call to start: among the idle receivers of the orgs under
// their bound, the first notification due of the org served longest ago.
// n.mu is held.
func (n *Notifier) next(now time.Time) (receiver, *outgoing) {
	var (
		best    receiver
		bestOut *outgoing
	)
	for r, l := range n.lines {
		if l.busy || n.byOrg[r.org] >= n.orgShare(r.org) {
			continue
		}
		i := slices.IndexFunc(l.pending, func(o *outgoing) bool { return !now.Before(o.nextAt) })
		if i < 0 {
			continue
		}
		out := l.pending[i]
		if bestOut == nil || n.before(r, out, best, bestOut) {
			best, bestOut = r, out
		}
	}
	return best, bestOut
}

// orgShare is the most calls org may have in flight now: MaxInFlightPerOrg,
// and its fair share of MaxInFlight beside the orgs with calls in flight.
// n.mu is held.
func (n *Notifier) orgShare(org string) int {
	return int(min(int64(n.cfg.MaxInFlightPerOrg), fair.ShareOf(int64(n.cfg.MaxInFlight), n.byOrg, org)))
}

// before orders candidate calls: the org served longest ago, then the
// notification queued first (its id is time-ordered), then the receiver.
func (n *Notifier) before(r receiver, out *outgoing, than receiver, thanOut *outgoing) bool {
	if a, b := n.served[r.org], n.served[than.org]; a != b {
		return a < b
	}
	if out.id != thanOut.id {
		return out.id < thanOut.id
	}
	return r.url < than.url
}

// start makes one call to r in a goroutine of its own. n.mu is held.
func (n *Notifier) start(ctx context.Context, r receiver, out *outgoing, now time.Time) {
	n.lines[r].busy = true
	n.inFlight++
	n.byOrg[r.org]++
	out.attempts++
	go func() {
		res := n.call(ctx, r.url, out, now)
		n.mu.Lock()
		defer n.mu.Unlock()
		n.settle(r, out, res)
		n.inFlight--
		n.byOrg[r.org]--
		if n.byOrg[r.org] == 0 {
			delete(n.byOrg, r.org)
		}
		n.dispatch(ctx)
		if n.inFlight == 0 {
			n.idle.Broadcast()
		}
	}()
}

// settle records a call's result on r's line: sent, retried after a
// doubling backoff, or given up after Attempts calls. n.mu is held.
func (n *Notifier) settle(r receiver, out *outgoing, res delivery.Result) {
	l := n.lines[r]
	l.busy = false
	done := true
	switch {
	case res.Outcome != intake.DeliveryRetry:
		n.cfg.Metrics.Notifications.WithLabelValues("sent").Inc()
	case out.attempts >= n.cfg.Attempts:
		n.cfg.Metrics.Notifications.WithLabelValues("given_up").Inc()
		n.cfg.Logger.Warn("notifier: gave up on a notification", "org_id", out.n.OrgID, "type", out.n.Type,
			"subject", out.n.Subject, "slack", out.secret == "", "attempts", out.attempts, "err", res.Err)
	default:
		n.cfg.Metrics.Notifications.WithLabelValues("failed").Inc()
		out.nextAt = n.cfg.Clock.Now().UTC().Add(n.cfg.Backoff << (out.attempts - 1))
		done = false
	}
	if done {
		l.pending = slices.DeleteFunc(l.pending, func(o *outgoing) bool { return o == out })
	}
	if len(l.pending) == 0 {
		delete(n.lines, r)
		if !n.orgHasLine(r.org) {
			delete(n.served, r.org) // nothing queued: it starts afresh
		}
	}
}

func (n *Notifier) orgHasLine(org string) bool {
	for r := range n.lines {
		if r.org == org {
			return true
		}
	}
	return false
}

func (n *Notifier) call(ctx context.Context, url string, out *outgoing, now time.Time) delivery.Result {
	if out.secret == "" {
		body, _ := json.Marshal(map[string]string{"text": SlackText(out.n)})
		return n.cfg.Sender.Post(ctx, url, body, nil, now)
	}
	body, _ := json.Marshal(out.n)
	return n.cfg.Sender.SendBody(ctx, url, []string{out.secret}, out.id, body, http.Header{}, now)
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

// subjectLabel names a notification's subject with what it is: by its
// name, the id after it for lookup.
func subjectLabel(n Notification) string {
	switch n.SubjectKind {
	case intake.SubjectConsumer:
		return "consumer " + named(n.SubjectName, n.Subject)
	case intake.SubjectEndpoint:
		ep := "endpoint " + n.Subject
		if n.SubjectName != "" {
			ep = "endpoint " + named(n.SubjectName, n.Subject)
		}
		return ep + " of connection " + named(n.ConnectionName, n.ConnectionID)
	case intake.SubjectConnection:
		if n.Type == intake.NoticeSchemaChanged {
			_, typ, _ := strings.Cut(n.Subject, "/")
			return "event type " + typ + " of connection " + named(n.ConnectionName, n.ConnectionID)
		}
		return "connection " + named(n.SubjectName, n.Subject)
	}
	switch n.Type {
	case intake.NoticeMessageDead, intake.NoticeSignatureFailures:
		return "endpoint " + n.Subject
	case intake.NoticeStorageQuota:
		return n.Subject
	case intake.NoticeIssueOpened, intake.NoticeIssueReopened, intake.NoticeIssueResolved:
		return "issue " + n.Subject
	case intake.NoticeSchemaChanged:
		conn, typ, _ := strings.Cut(n.Subject, "/")
		return "event type " + typ + " of connection " + conn
	}
	return "consumer " + n.Subject
}

// named is a name for people, quoted and safe in Slack's markup, with the
// id after it.
func named(name, id string) string {
	return `"` + slackEscape.Replace(name) + `" (` + id + ")"
}

// slackEscape escapes what Slack reads as markup in text.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
