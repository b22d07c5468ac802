// Package worker processes received messages: it claims due messages as
// numbered attempts, verifies and interprets each with its provider's
// adapter, and settles the result (events and state) in one transaction.
package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/internal/cache"
	"github.com/intakehq/intake/internal/fair"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/rules"
)

// Config wires a Worker.
type Config struct {
	Store       intake.MessageQueue
	Sealer      *seal.Sealer
	PublicURL   string // the base URL providers were given, for URL-signing schemes
	Clock       intake.Clock
	Backoff     intake.Backoff
	Lease       time.Duration // how long an attempt may run before another worker takes it over (default 1m)
	Poll        time.Duration // fallback poll when no wake-up arrives (default 1s)
	Batch       int           // messages claimed per round (default 64)
	Concurrency int           // messages processed at once (default 64: a batch's settlements share commits)
	// Handoff, when set, brings the messages this process's ingest just
	// committed under their first lease; they are taken before claims.
	Handoff *handoff.Messages
	// FanOut, when set, judges the fan-out of a message's events before
	// their settle, which writes it with them; Calls then carries what
	// the settle did, its first calls among it, to the router, which
	// makes them on the call slots FanOut held (serve gives the router
	// the same Judger).
	FanOut *fanout.Judger
	Calls  *handoff.Calls
	// Catalog, when set, is told of the events each settle created (the
	// event-type catalog learns from them off this path: Observe only
	// counts and keeps a few, never waiting for the store).
	Catalog Observer
	// Pressure, when set, is ingest's: while requests wait for their
	// commits above its threshold, the worker takes new work (handed over
	// or claimed) only within its share of the slots, so ingest keeps the
	// writer and the CPU; the backlog is claimed once it falls back.
	Pressure *pressure.Gauge
	// HandoffWait is how long a handed-over message may wait while the
	// worker holds back, or any message taken while its org is past its
	// events budget, before it is released for any process to claim
	// (default 2s).
	HandoffWait time.Duration
	// Events, when set, paces the events each org's messages make (DESIGN
	// §26): a settle spends the events it made from its org's budget, and
	// while an org is past it none of its messages is started or claimed;
	// they wait queued in the store (what was taken is released) while
	// other orgs' messages flow.
	Events *fair.Rates
	// Rules runs connections' filters and interpret scripts; nil: an
	// engine with the default bounds.
	Rules   *rules.Engine
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Blobs is where bodies too large for the database are kept; a
	// message that names an object reads its body from there.
	Blobs intake.Blobs
	// BodyMemory, when set, is shared by the bodies read from Blobs while
	// their messages are processed (DESIGN §26; ingress's budget): each is
	// charged BodyCharge times its size, until its settle. A message whose
	// body does not fit within the budget's Wait is released, to be claimed
	// again, while other orgs' messages flow.
	BodyMemory *fair.Budget

	// KeyRetry is how long a message whose connection secrets this
	// process's master key cannot open waits, released, before any process
	// claims it again (default 10s).
	KeyRetry time.Duration
}

// Worker claims and processes messages until its context ends.
type Worker struct {
	cfg Config
	// Connection and endpoint rows (secrets still sealed) are reused for a
	// few seconds, or until the store's change counter moves: a burst from
	// one provider costs one read of each.
	conns cache.TTL[string, intake.Connection]
	eps   cache.TTL[string, intake.Endpoint]
	// unopenable holds the connections whose secrets this process could
	// not open, so each is logged once, not once per message.
	unopenable sync.Map
	// slots bounds the attempts running at once, claimed and handed over
	// alike; running counts them.
	slots   chan struct{}
	running sync.WaitGroup
	// busy counts the attempts running per org.
	busyMu sync.Mutex
	busy   map[string]int
	// freed wakes Run (coalesced) when an attempt ends and its slot
	// comes free.
	freed chan struct{}
	// owing holds the orgs whose settles went past their events budget
	// and may still be waiting for it (Config.Events says until when).
	owingMu sync.Mutex
	owing   map[string]struct{}
	// perMessage is the events each org's last settled message made, by
	// which its messages yet to settle are judged (owingMu).
	perMessage map[string]int
	// waitingBody holds the orgs with an attempt waiting for room in the
	// body memory budget, one at most each (busyMu).
	waitingBody map[string]bool
}

// rowTTL is how long a worker reuses connection and endpoint rows.
const rowTTL = 5 * time.Second

// New returns a worker with defaults filled in.
func New(cfg Config) *Worker {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.Backoff.Base == 0 {
		cfg.Backoff = intake.DefaultBackoff
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.Batch == 0 {
		cfg.Batch = 64
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 64
	}
	if cfg.HandoffWait == 0 {
		cfg.HandoffWait = 2 * time.Second
	}
	if cfg.KeyRetry == 0 {
		cfg.KeyRetry = 10 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Rules == nil {
		e, err := rules.New(rules.Config{}, cfg.Clock)
		if err != nil {
			panic(err) // the default CEL environment always builds
		}
		cfg.Rules = e
	}
	if cfg.FanOut != nil && cfg.Calls == nil {
		panic("worker: a fan-out judged before the settle needs Calls to hand its calls back")
	}
	w := &Worker{cfg: cfg, slots: make(chan struct{}, cfg.Concurrency), freed: make(chan struct{}, 1)}
	w.conns.TTL, w.eps.TTL = rowTTL, rowTTL
	w.conns.Changes, w.eps.Changes = cfg.Store.Changes(), cfg.Store.Changes()
	return w
}

// Observer learns from the events settles create (catalog.Learner).
type Observer interface {
	Observe(events []intake.Event)
}

// Run processes messages until ctx ends: those handed over by this
// process's ingest as they arrive, and claimed ones when the store wakes it
// or on a poll as the fallback. What it takes waits in a queue per org and
// is started org by org in turn, so one org's backlog never waits in front
// of another's (DESIGN §18). While every slot is busy it still claims, on
// each poll, the due messages of orgs with nothing waiting. While ingest
// is under pressure it takes new work only within its share of the slots,
// claims nothing while they are busy, and releases handed-over messages
// that waited longer than HandoffWait. An org past its events budget
// (Config.Events) has nothing started or claimed until it is back within
// it; what it had taken is released after HandoffWait. Work claimed
// or handed over but not started when ctx ends is released so another
// process takes it at once; Run returns once the attempts it started have
// settled.
func (w *Worker) Run(ctx context.Context) error {
	wake, stop := w.cfg.Store.Listen(intake.TopicMessages)
	defer stop()
	poll := time.NewTimer(w.cfg.Poll)
	defer poll.Stop()
	handed := w.cfg.Handoff.Claims()
	// paced wakes Run when the first org waiting for its events budget
	// is back within it. intake.Clock has no timers: the wait is measured
	// on the clock and waited on the wall's, with the poll as the fallback.
	paced := time.NewTimer(time.Hour)
	paced.Stop()
	defer paced.Stop()
	var queue ready
	for claim := true; ctx.Err() == nil; {
		owing, wait := w.owingOrgs()
		if wait > 0 {
			paced.Reset(wait)
		}
		// An org with a body waiting for room in its body memory share
		// has nothing more started or claimed until it is taken: its
		// messages wait queued, not in the worker's slots.
		owing = append(owing, w.waitingBodyOrgs()...)
		w.releaseOwing(ctx, &queue, owing)
		w.startReady(ctx, &queue, owing)
		if room := min(w.cfg.Batch, w.room()); claim && room > 0 {
			n, err := w.claim(ctx, &queue, room, owing...)
			if err != nil && ctx.Err() == nil {
				w.cfg.Logger.Error("worker: claim failed", "err", err)
			}
			if claim = n == room; !claim { // when full, there may be more due right now
				poll.Reset(w.cfg.Poll)
			}
			continue
		}
		var calm, freed <-chan struct{}
		if w.room() <= 0 {
			if freed = w.freed; w.cfg.Pressure.High() {
				calm = w.cfg.Pressure.Calm()
			}
		}
		select {
		case <-ctx.Done():
		case c := <-handed:
			queue.push(waiting{claim: c, handed: true, since: c.Message.ReceivedAt})
		case <-wake:
			claim = true
		case <-paced.C:
			claim = true
		case <-poll.C:
			claim = true
			poll.Reset(w.cfg.Poll)
			if w.room() <= 0 {
				w.releaseOverdue(ctx, &queue)
				// Every slot is busy: messages of orgs with nothing
				// running or queued are claimed to wait their turn,
				// unless ingest needs the store.
				if n := w.cfg.Batch - queue.len(); n > 0 && !w.cfg.Pressure.High() {
					if _, err := w.claim(ctx, &queue, n, append(w.busyOrgs(), owing...)...); err != nil && ctx.Err() == nil {
						w.cfg.Logger.Error("worker: claim failed", "err", err)
					}
				}
			}
		case <-freed:
		case <-calm:
		}
	}
	for _, q := range queue.take(func(waiting) bool { return true }) {
		w.giveBack(ctx, q)
	}
	w.releaseHanded(ctx)
	w.running.Wait()
	return nil
}

// room is how many more attempts the worker may start now: its free
// slots, fewer while ingest is under pressure.
func (w *Worker) room() int {
	return w.cfg.Pressure.Limit(cap(w.slots)) - len(w.slots)
}

// startReady takes what waits in the hand-off into the queue and starts
// queued messages, org by org in turn, while there is room; the messages of
// the orgs owing events wait.
func (w *Worker) startReady(ctx context.Context, queue *ready, owing []string) {
	for more := true; more; {
		select {
		case c := <-w.cfg.Handoff.Claims():
			queue.push(waiting{claim: c, handed: true, since: c.Message.ReceivedAt})
		default:
			more = false
		}
	}
	now := w.cfg.Clock.Now()
	held := func(org string) bool {
		return slices.Contains(owing, org) || !w.mayStart(org, now) || w.waitsForBody(org)
	}
	for w.room() > 0 {
		q, ok := queue.pop(held)
		if !ok {
			return
		}
		if q.handed {
			w.startHanded(ctx, q.claim)
		} else {
			w.start(ctx, q.claim)
		}
	}
}

// releaseOverdue, while the worker holds back, releases each handed-over
// message that waited longer than HandoffWait since its receipt, for any
// process to claim.
func (w *Worker) releaseOverdue(ctx context.Context, queue *ready) {
	cutoff := w.cfg.Clock.Now().Add(-w.cfg.HandoffWait)
	for _, q := range queue.take(func(q waiting) bool { return q.handed && !q.claim.Message.ReceivedAt.After(cutoff) }) {
		w.giveBack(ctx, q)
		w.cfg.Metrics.HandoffReleased.Inc()
	}
}

// releaseOwing releases each message of an org owing events that waited
// longer than HandoffWait since it was taken, so its lease never runs out
// in the queue; until then a budget that refills soon costs no write, and
// an org's handed-over messages held keep its room in the hand-off, so
// its fresh messages are stored queued rather than handed over.
func (w *Worker) releaseOwing(ctx context.Context, queue *ready, owing []string) {
	if len(owing) == 0 {
		return
	}
	cutoff := w.cfg.Clock.Now().Add(-w.cfg.HandoffWait)
	for _, q := range queue.take(func(q waiting) bool {
		return slices.Contains(owing, q.claim.Message.OrgID) && !q.since.After(cutoff)
	}) {
		w.giveBack(ctx, q)
	}
}

// mayStart reports whether org may start one more message now within its
// events budget, which a settle is charged only once it made its events:
// the budget left must cover what the org's running messages and this one
// will make, each judged by the events its last settled message made, and
// until one has settled its messages run one at a time. An org with none
// running may always start one, so it never waits but for its debt; so an
// org past its budget overshoots it by one message's events at most, not
// by as many as the worker runs at once.
func (w *Worker) mayStart(org string, now time.Time) bool {
	if w.cfg.Events == nil {
		return true
	}
	running := w.busyCount(org)
	if running == 0 {
		return true
	}
	w.owingMu.Lock()
	per, known := w.perMessage[org]
	w.owingMu.Unlock()
	return known && w.cfg.Events.Tokens(org, now) >= float64((running+1)*max(per, 1))
}

// spend takes the events a settle made from its org's budget; an org that
// goes past it waits (see owingOrgs).
func (w *Worker) spend(org string, n int) {
	if w.cfg.Events == nil {
		return
	}
	over := w.cfg.Events.Spend(org, n, w.cfg.Clock.Now()) > 0
	w.owingMu.Lock()
	defer w.owingMu.Unlock()
	if w.perMessage == nil {
		w.perMessage = map[string]int{}
	}
	w.perMessage[org] = n
	if !over {
		return
	}
	if _, ok := w.owing[org]; ok {
		return
	}
	if w.owing == nil {
		w.owing = map[string]struct{}{}
	}
	w.owing[org] = struct{}{}
	w.cfg.Metrics.OrgEventsThrottled.Inc()
}

// owingOrgs lists the orgs still past their events budget now, and how
// long until the first of them is back within it (0: none waits).
func (w *Worker) owingOrgs() (orgs []string, wait time.Duration) {
	now := w.cfg.Clock.Now()
	w.owingMu.Lock()
	defer w.owingMu.Unlock()
	for org := range w.owing {
		d := w.cfg.Events.Wait(org, now)
		if d <= 0 {
			delete(w.owing, org)
			continue
		}
		orgs = append(orgs, org)
		if wait == 0 || d < wait {
			wait = d
		}
	}
	w.cfg.Metrics.OrgsEventsWaiting.Set(float64(len(orgs)))
	return orgs, wait
}

// giveBack releases a message taken and not started.
func (w *Worker) giveBack(ctx context.Context, q waiting) {
	if q.handed {
		w.cfg.Handoff.Taken(q.claim.Message.OrgID)
	}
	w.release(ctx, q.claim)
}

// RunOnce claims one batch of due messages and processes it, returning how
// many it claimed once every attempt it started has settled.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	var queue ready
	owing, _ := w.owingOrgs()
	n, err := w.claim(ctx, &queue, w.cfg.Batch, owing...)
	for q, ok := queue.pop(nil); ok; q, ok = queue.pop(nil) {
		w.start(ctx, q.claim)
	}
	w.running.Wait()
	return n, err
}

// claim claims up to limit due messages of the orgs with nothing queued,
// nor in skip, and queues them, returning how many it claimed.
func (w *Worker) claim(ctx context.Context, queue *ready, limit int, skip ...string) (int, error) {
	claims, err := w.cfg.Store.ClaimMessages(ctx, w.cfg.Clock.Now(), w.cfg.Lease, limit, append(skip, queue.orgs()...)...)
	if err != nil {
		w.cfg.Metrics.WorkerClaims.WithLabelValues("error").Inc()
		return 0, err
	}
	if len(claims) == 0 {
		w.cfg.Metrics.WorkerClaims.WithLabelValues("empty").Inc()
		return 0, nil
	}
	w.cfg.Metrics.WorkerClaims.WithLabelValues("work").Inc()
	now := w.cfg.Clock.Now()
	for _, c := range claims {
		queue.push(waiting{claim: c, since: now})
	}
	return len(claims), nil
}

// startHanded starts a handed-over message, unless its lease already ran
// out while it waited: then it is another claim's to take.
func (w *Worker) startHanded(ctx context.Context, c intake.Claim) {
	w.cfg.Handoff.Taken(c.Message.OrgID)
	if !w.cfg.Clock.Now().Before(c.LeaseUntil) {
		return
	}
	w.start(ctx, c)
}

// start runs an attempt once a slot is free. Draining, it hands the
// attempt back rather than let its lease run out.
func (w *Worker) start(ctx context.Context, c intake.Claim) {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		w.release(ctx, c)
		return
	}
	w.running.Add(1)
	w.setBusy(c.Message.OrgID, 1)
	go func() {
		defer func() {
			// Not running before the slot is freed: Run, woken by freed,
			// judges the org's next message by what still runs.
			w.setBusy(c.Message.OrgID, -1)
			<-w.slots
			select {
			case w.freed <- struct{}{}:
			default:
			}
			w.running.Done()
		}()
		w.process(context.WithoutCancel(ctx), c)
	}()
}

// startWaitingBody makes an attempt of org the org's one waiting for body
// memory, unless another waits already (false).
func (w *Worker) startWaitingBody(org string) bool {
	w.busyMu.Lock()
	defer w.busyMu.Unlock()
	if w.waitingBody[org] {
		return false
	}
	if w.waitingBody == nil {
		w.waitingBody = map[string]bool{}
	}
	w.waitingBody[org] = true
	return true
}

// stopWaitingBody ends org's attempt waiting for body memory.
func (w *Worker) stopWaitingBody(org string) {
	w.busyMu.Lock()
	defer w.busyMu.Unlock()
	delete(w.waitingBody, org)
}

// waitsForBody reports whether an attempt of org waits for body memory.
func (w *Worker) waitsForBody(org string) bool {
	w.busyMu.Lock()
	defer w.busyMu.Unlock()
	return w.waitingBody[org]
}

// waitingBodyOrgs lists the orgs with an attempt waiting for body memory.
func (w *Worker) waitingBodyOrgs() []string {
	w.busyMu.Lock()
	defer w.busyMu.Unlock()
	return slices.Collect(maps.Keys(w.waitingBody))
}

// setBusy counts n more attempts running for org.
func (w *Worker) setBusy(org string, n int) {
	w.busyMu.Lock()
	defer w.busyMu.Unlock()
	if w.busy == nil {
		w.busy = map[string]int{}
	}
	if w.busy[org] += n; w.busy[org] <= 0 {
		delete(w.busy, org)
	}
}

// busyCount is how many attempts of org are running.
func (w *Worker) busyCount(org string) int {
	w.busyMu.Lock()
	defer w.busyMu.Unlock()
	return w.busy[org]
}

// busyOrgs lists the orgs with attempts running.
func (w *Worker) busyOrgs() []string {
	w.busyMu.Lock()
	defer w.busyMu.Unlock()
	return slices.Collect(maps.Keys(w.busy))
}

// releaseHanded gives back what was handed over but not started. A
// message handed over after this (an ingest still finishing) keeps its
// lease until it expires, and is claimed then.
func (w *Worker) releaseHanded(ctx context.Context) {
	for {
		select {
		case c := <-w.cfg.Handoff.Claims():
			w.cfg.Handoff.Taken(c.Message.OrgID)
			w.release(ctx, c)
		default:
			return
		}
	}
}

func (w *Worker) release(ctx context.Context, c intake.Claim) {
	if err := w.cfg.Store.ReleaseMessage(context.WithoutCancel(ctx), w.cfg.Clock.Now(), 0, c.Message.ID, c.Attempt); err != nil {
		w.cfg.Logger.Warn("worker: release failed", "message_id", c.Message.ID, "err", err)
	}
}

// Process runs one claimed attempt to its settlement.
func (w *Worker) Process(ctx context.Context, c intake.Claim) { w.process(ctx, c) }

func (w *Worker) process(ctx context.Context, c intake.Claim) {
	ctx, span := startProcess(ctx, c)
	defer span.End()
	start := time.Now()
	free, err := w.holdBody(ctx, &c.Message)
	if err != nil {
		w.cfg.Logger.Debug("worker: no room for a body now; the message waits", "message_id", c.Message.ID, "err", err)
		w.release(ctx, c)
		return
	}
	defer free()
	views := map[string]*rules.EventView{}
	v := w.attempt(ctx, c, views)
	if v.release != "" {
		w.releaseUnopenable(ctx, c, v.release)
		return
	}
	st := v.st
	traceEvents(ctx, st.Events)
	// The settle writes the events' fan-out, judged now; the calls it
	// leased go to the router, which makes the first calls.
	var judged fanout.Judged
	if len(st.Events) > 0 && w.cfg.FanOut != nil {
		judged = w.cfg.FanOut.Judge(ctx, &c.Message, st.Events, views)
		st.FanOuts = judged.FanOuts
	}
	out, err := w.cfg.Store.SettleMessage(ctx, w.cfg.Clock.Now(), st)
	if st.FanOuts != nil {
		// A settle that failed leased nothing this process can know of:
		// every slot held for it is freed.
		settled := out
		if err != nil {
			settled = intake.Settled{}
		}
		w.cfg.FanOut.Settled(judged, settled)
		w.cfg.Calls.Give(handoff.Settled{OrgID: c.Message.OrgID, FanOuts: st.FanOuts, Settled: settled})
	}
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		w.cfg.Logger.Info("worker: attempt lost its lease; result dropped", "message_id", c.Message.ID, "attempt", c.Attempt)
		traceSettled(span, st, out, err)
		return
	case err != nil:
		// The result could not be committed (a subject lookup or the store
		// failed): a transient failure of this attempt. If even that cannot
		// be recorded, the lease expires and the next attempt runs.
		w.cfg.Logger.Error("worker: settle failed", "message_id", c.Message.ID, "attempt", c.Attempt, "err", err)
		st = retryLater(intake.Settlement{MessageID: st.MessageID, Attempt: st.Attempt}, c.Message.MaxAttempts,
			w.cfg.Clock.Now().Add(w.cfg.Backoff.Delay(st.Attempt)), fmt.Errorf("commit result: %w", err))
		if out, err = w.cfg.Store.SettleMessage(ctx, w.cfg.Clock.Now(), st); err != nil {
			traceSettled(span, st, out, err)
			return
		}
	}
	traceSettled(span, st, out, nil)
	w.cfg.Metrics.ProcessSeconds.Observe(time.Since(start).Seconds())
	w.cfg.Metrics.Messages.WithLabelValues(string(out.State), out.Outcome).Inc()
	w.cfg.Metrics.EventsCreated.Add(float64(len(out.Events)))
	w.spend(c.Message.OrgID, len(out.Events))
	if w.cfg.Catalog != nil && len(out.Events) > 0 {
		w.cfg.Catalog.Observe(out.Events)
	}
	if out.Outcome == intake.OutcomeConflict {
		w.cfg.Metrics.Conflicts.Inc()
		w.cfg.Logger.Warn("worker: provider event id seen with other content", "message_id", c.Message.ID,
			"provider_event_id", st.ProviderEventID)
	}
	if out.State == intake.MessageDead {
		w.cfg.Logger.Warn("worker: message dead", "message_id", c.Message.ID, "error_code", st.ErrorCode, "error", st.ErrorMessage)
	}
}

// BodyCharge is how many times its size a body read from the blob store
// is charged while its message is processed: the body, what it decodes to
// (the adapters refuse a body that would decode to more than
// provider.TreeFactor times its size) and the events' data made from it
// (at most about its size again).
const BodyCharge = 2 + provider.TreeFactor

// needsBodyRoom reports whether m's body is to be read, from the blob store
// or (deferred by its claim) from the database, within the body memory
// budget.
func (w *Worker) needsBodyRoom(m *intake.Message) bool {
	return (m.BlobKey != "" || m.DeferredBody > 0) && m.Body == nil && !m.BodyExpired && w.cfg.BodyMemory != nil
}

// holdBody reads m's body from the blob store, or from the database when
// its claim deferred it, once the body memory budget has room for it, and
// returns what gives the room back (see bodyRoom). A body that cannot be
// opened is left for the attempt, which judges that error.
func (w *Worker) holdBody(ctx context.Context, m *intake.Message) (free func(), err error) {
	if !w.needsBodyRoom(m) {
		return func() {}, nil
	}
	if m.DeferredBody > 0 {
		free, err = w.bodyRoom(ctx, m.OrgID, BodyCharge*m.DeferredBody)
		if err != nil {
			return nil, err
		}
		if sb, err := w.cfg.Store.MessageBody(ctx, intake.Scope{}, m.ID); err == nil && sb.BlobKey == "" {
			m.Body = sb.Body
		}
		return free, nil
	}
	r, size, err := intake.StoredBody{BlobKey: m.BlobKey}.Open(ctx, w.cfg.Blobs)
	if err != nil {
		return func() {}, nil
	}
	defer r.Close()
	free, err = w.bodyRoom(ctx, m.OrgID, BodyCharge*max(size, 0))
	if err != nil {
		return nil, err
	}
	body := bytes.NewBuffer(make([]byte, 0, max(size, 0)+bytes.MinRead))
	if _, err := body.ReadFrom(r); err == nil {
		m.Body = body.Bytes()
	}
	return free, nil
}

// bodyRoom takes n of the body memory budget for org's body: at once when
// it is free, else by waiting for it as the org's one attempt that waits,
// which holds the org's next messages back (they wait queued, not in the
// worker's slots). Another of the org's attempts finding no room while
// one waits is refused at once (errBodyWaits), and its message released.
// Opening and reading a body is no wait for room: while there is room,
// the org's bodies are read side by side, not one at a time behind object
// storage's answers.
func (w *Worker) bodyRoom(ctx context.Context, org string, n int64) (free func(), err error) {
	if free, ok := w.cfg.BodyMemory.TryTake(org, n); ok {
		return free, nil
	}
	if !w.startWaitingBody(org) {
		return nil, errBodyWaits
	}
	defer w.stopWaitingBody(org)
	return w.cfg.BodyMemory.Take(ctx, org, n)
}

// errBodyWaits refuses body memory to an attempt of an org that has one
// waiting for it already.
var errBodyWaits = errors.New("worker: another of the org's bodies waits for body memory")

// attempt verifies and interprets the message and says how it should
// settle: load reads and verifies, decide judges what it found. It puts in
// views the rules' view of each event it makes, built once for the
// connection's filter and the consumers' rules alike.
func (w *Worker) attempt(ctx context.Context, c intake.Claim, views map[string]*rules.EventView) verdict {
	f := w.load(ctx, c, views)
	f.retryAt = w.cfg.Clock.Now().Add(w.cfg.Backoff.Delay(c.Attempt))
	return decide(f)
}

// load runs an attempt's steps up to the first that fails: it reads the
// body and the connection, opens the secrets, verifies the signature, has
// the adapter (or the connection's script) interpret the request, and
// builds the events the connection's filter keeps. What each step means
// for the message is decide's.
func (w *Worker) load(ctx context.Context, c intake.Claim, views map[string]*rules.EventView) found {
	m := c.Message
	f := found{claim: c}
	stop := func(at step, err error) found {
		f.stopped, f.err = at, err
		return f
	}
	if c.Attempt > m.MaxAttempts || m.BodyExpired {
		return f // decide judges the claim alone
	}
	if m.BlobKey != "" && m.Body == nil {
		body, err := intake.ReadBody(ctx, w.cfg.Blobs, nil, m.BlobKey)
		if err != nil {
			return stop(stepObject, err)
		}
		m.Body = body
	}
	if m.DeferredBody > 0 && m.Body == nil {
		sb, err := w.cfg.Store.MessageBody(ctx, intake.Scope{}, m.ID)
		if err != nil {
			return stop(stepBody, err)
		}
		m.Body = sb.Body
	}
	conn, err := w.conns.Get(m.ConnectionID, w.cfg.Clock.Now(), func() (intake.Connection, error) {
		return w.cfg.Store.Connection(ctx, intake.Scope{}, m.ConnectionID)
	})
	if err != nil {
		return stop(stepConnection, err)
	}
	adapter, ok := provider.Lookup(conn.Provider)
	if !ok {
		return stop(stepAdapter, fmt.Errorf("no adapter for provider %q", conn.Provider))
	}
	cfg, err := provider.ParseConfig(conn.Config)
	if err != nil {
		return stop(stepConfig, err)
	}
	secrets, err := w.leaseSecrets(conn)
	if err != nil {
		return stop(stepSecrets, err)
	}
	publicURL, previousURL := w.publicURLs(ctx, m)
	req := &provider.Request{Method: m.Method, URL: publicURL, Header: m.Header, Body: m.Body, ReceivedAt: m.ReceivedAt, Org: m.OrgID}
	if req.Query, err = url.ParseQuery(m.Query); err != nil {
		req.Query = url.Values{}
	}
	var perm *provider.PermanentError
	var unsure *provider.TransientError
	err = adapter.Verify(req, secrets, cfg)
	// refused: the signature was judged and does not verify, not that it
	// could not be judged.
	refused := func() bool { return err != nil && !errors.As(err, &perm) && !errors.As(err, &unsure) }
	if refused() {
		// A secret added in the last seconds is not in the cached row yet:
		// check the current row before calling the signature bad.
		if fresh, ferr := w.cfg.Store.Connection(ctx, intake.Scope{}, m.ConnectionID); ferr == nil &&
			!bytes.Equal(fresh.SealedSecrets, conn.SealedSecrets) {
			if s, serr := w.leaseSecrets(fresh); serr == nil {
				err = adapter.Verify(req, s, cfg)
			}
		}
	}
	if refused() && previousURL != "" {
		// Sent, within a rotation's overlap, to the URL it replaced: a
		// URL-signing provider signed that one.
		old := *req
		old.URL = previousURL
		if adapter.Verify(&old, secrets, cfg) == nil {
			req, err = &old, nil
		}
	}
	if err != nil {
		return stop(stepVerify, err)
	}
	if src := cfg.String("script", ""); src != "" {
		// A provider described without code: its script reads the
		// verified request.
		f.in, err = w.interpret(ctx, conn, m, req, src)
	} else {
		f.in, err = adapter.Interpret(req, cfg)
	}
	if err == nil && len(f.in.Events) > intake.MaxEventsPerMessage {
		err = errTooManyEvents(len(f.in.Events))
	}
	if err != nil {
		return stop(stepInterpret, err)
	}
	storableIDs(&f.in)
	if f.in.Challenge {
		return f
	}
	f.events = w.events(conn, m, f.in)
	f.made = len(f.events)
	origin := rules.Origin{Header: m.Header, Query: m.Query, Credentials: provider.CredentialHeaders(conn)}
	for i := range f.events {
		e := &f.events[i]
		views[e.ID] = rules.NewEventView(intake.NewEnvelope(e), func() (rules.Origin, error) { return origin, nil })
	}
	if conn.Filter != "" && len(f.events) > 0 {
		kept, err := w.filter(ctx, conn, m, f.events, views)
		if err != nil {
			return stop(stepFilter, err)
		}
		w.cfg.Metrics.EventsFiltered.Add(float64(len(f.events) - len(kept)))
		f.events, f.filtered = kept, true
	}
	return f
}

// interpret runs a connection's interpret script on a verified request.
func (w *Worker) interpret(ctx context.Context, conn intake.Connection, m intake.Message, req *provider.Request, src string) (provider.Interpretation, error) {
	evs, err := w.cfg.Rules.Interpret(ctx, rules.Script{Scope: m.OrgID, Source: src},
		rules.NewRequest(m.Method, req.Query, m.Header, m.Body, provider.CredentialHeaders(conn)...))
	if err != nil {
		return provider.Interpretation{}, err
	}
	var in provider.Interpretation
	for _, e := range evs {
		in.Events = append(in.Events, provider.EventSpec{ProviderEventID: e.ProviderEventID, Type: e.Type, Kind: e.Kind,
			OccurredAt: e.OccurredAt, Data: e.Data, ObjectIDs: e.ObjectIDs})
	}
	if len(evs) == 1 {
		// One event: its id is the message's identity, for deduplication.
		in.ProviderEventID, in.EventType, in.Kind = evs[0].ProviderEventID, evs[0].Type, evs[0].Kind
	}
	return in, nil
}

// filter keeps the events the connection's filter accepts. A filter that
// fails on an event drops it, as a consumer's does; an event its view
// cannot be built for (its envelope does not encode or decode) is an
// error, as is the caller's context ending.
func (w *Worker) filter(ctx context.Context, conn intake.Connection, m intake.Message, events []intake.Event, views map[string]*rules.EventView) ([]intake.Event, error) {
	var kept []intake.Event
	for _, e := range events {
		in, err := views[e.ID].Input()
		if err != nil {
			return nil, err
		}
		ok, err := w.cfg.Rules.Filter(ctx, conn.Filter, in)
		if ctx.Err() != nil {
			return nil, ctx.Err() // stopped, not judged
		}
		if err != nil {
			w.cfg.Logger.Info("worker: connection filter failed on an event; dropped", "message_id", m.ID, "connection_id", conn.ID, "err", err)
		}
		if ok {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// publicURLs rebuild the address the provider posted to, and, for a
// message received while a rotation's overlap let the replaced token work,
// the address that token made. Empty when a token cannot be opened: only
// URL-signing adapters need them, and they then refuse the signature.
func (w *Worker) publicURLs(ctx context.Context, m intake.Message) (current, previous string) {
	ep, err := w.eps.Get(m.EndpointID, w.cfg.Clock.Now(), func() (intake.Endpoint, error) {
		return w.cfg.Store.Endpoint(ctx, intake.Scope{}, m.EndpointID)
	})
	if err != nil {
		return "", ""
	}
	current = w.tokenURL(ep, ep.SealedToken, m.Query)
	if m.ReceivedAt.Before(ep.PreviousExpiresAt) {
		previous = w.tokenURL(ep, ep.PreviousSealedToken, m.Query)
	}
	return current, previous
}

// tokenURL is the public URL of an endpoint's sealed token; "" when there
// is none or it cannot be opened.
func (w *Worker) tokenURL(ep intake.Endpoint, sealed []byte, query string) string {
	if len(sealed) == 0 {
		return ""
	}
	tok, err := w.cfg.Sealer.Open(sealed, []byte(ep.ID))
	if err != nil {
		return ""
	}
	u := strings.TrimRight(w.cfg.PublicURL, "/") + "/webhooks/" + string(tok)
	if query != "" {
		u += "?" + query
	}
	return u
}

// leaseSecrets opens the connection's sealed secrets for this attempt only;
// they are never kept beyond it.
func (w *Worker) leaseSecrets(conn intake.Connection) ([][]byte, error) {
	secrets, err := w.cfg.Sealer.ConnectionSecrets(conn)
	if err != nil {
		return nil, fmt.Errorf("open connection secrets: %w", err)
	}
	return secrets, nil
}

// storableIDs makes the ids a provider named storable as text in both
// databases, the same for every delivery: a NUL, which PostgreSQL's text
// refuses, and invalid UTF-8, which each database would keep or change in
// its own way, become U+FFFD. So such an id settles, and the provider's
// retry of it is a duplicate.
func storableIDs(in *provider.Interpretation) {
	in.ProviderEventID = storableText(in.ProviderEventID)
	for i := range in.Events {
		e := &in.Events[i]
		e.ProviderEventID = storableText(e.ProviderEventID)
		for j, id := range e.ObjectIDs {
			e.ObjectIDs[j] = storableText(id)
		}
	}
}

func storableText(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func (w *Worker) events(conn intake.Connection, m intake.Message, in provider.Interpretation) []intake.Event {
	now := w.cfg.Clock.Now()
	out := make([]intake.Event, 0, len(in.Events))
	for _, spec := range in.Events {
		occurred := spec.OccurredAt
		if occurred.IsZero() {
			occurred = m.ReceivedAt
		}
		kind := spec.Kind
		if kind == "" {
			kind = intake.KindEvent
		}
		out = append(out, intake.Event{
			ID: intake.NewID(), OrgID: m.OrgID, ConnectionID: m.ConnectionID, MessageID: m.ID,
			Provider: conn.Provider, Type: spec.Type, Kind: kind, ProviderEventID: spec.ProviderEventID,
			OccurredAt: occurred.UTC(), ReceivedAt: m.ReceivedAt, Data: spec.Data, DataTruncated: spec.DataTruncated,
			ObjectIDs: spec.ObjectIDs, State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts,
			NextAttemptAt: now, Replay: m.ReplayOf != "", CreatedAt: now,
		})
	}
	return out
}
