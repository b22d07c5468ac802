// Package outage keeps a dependency's outage to a few log lines: one when
// it begins, the first of each kind of failure it causes while it lasts,
// and one when it ends. Without it every loop logs its failure on every
// tick, and a PostgreSQL restart of a few seconds fills the log with
// dozens of lines saying the same thing. A failure the outage caused that
// is only told once it is over (a statement sent into a partition,
// answered once the link heals with the connection PostgreSQL ended
// meanwhile) is its tail: logged at info, not as a new warning.
package outage

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intakehq/intake"
)

// Watch follows one dependency: whoever talks to it reports each failure
// to reach it (Failed) and each success (Reached); its Handler holds back
// the repeats of what the outage makes the rest of intake log.
type Watch struct {
	name  string
	log   *slog.Logger // the begin and end lines: never held back
	clock intake.Clock

	down atomic.Bool
	// lastFailed is when a failure was last reported (Unix nanoseconds).
	lastFailed atomic.Int64
	mu         sync.Mutex
	// since is when the outage began; kinds the messages logged during it,
	// each with the records of it held back since. Once it is over, ended
	// is when, and kinds is kept for its tail.
	since, ended time.Time
	kinds        map[string]int
}

// Quiet is how long after the last failure a success ends an outage: a
// link that flaps (some statements fail, some pass) is one outage, not one
// per success, each logging its failures anew.
const Quiet = time.Second

// Tail is how long after an outage's end a failure of a kind it logged is
// taken for the outage's own, told late: a statement sent before the link
// failed can be answered only once it is back, with an error the outage
// caused (PostgreSQL ended the connection it waited on). Such a record is
// logged at info, with the dependency named in after_outage, so that one
// outage is not told twice as warnings.
const Tail = 5 * time.Second

// New watches the dependency name, logging its outages' beginning and
// end to log.
func New(name string, log *slog.Logger, clock intake.Clock) *Watch {
	return &Watch{name: name, log: log, clock: clock}
}

// Failed reports that the dependency could not be reached; the first
// failure of an outage logs that it began. It takes the lock a success
// ends the outage under, so that a failure reported meanwhile is the
// outage's last or the next one's first, never lost between the two.
func (w *Watch) Failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastFailed.Store(w.clock.Now().UnixNano())
	if w.down.Load() {
		return
	}
	w.since, w.kinds = w.clock.Now(), map[string]int{}
	w.down.Store(true)
	w.log.Error(w.name+": unreachable; what fails because of it is logged once per kind until it is back", "err", err)
}

// Reached reports that the dependency answered; the first success at
// least Quiet after an outage's last failure logs that it ended, how long
// it lasted and how many lines were held back.
func (w *Watch) Reached() {
	if !w.down.Load() || w.clock.Now().UnixNano()-w.lastFailed.Load() < int64(Quiet) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.down.Load() || w.clock.Now().UnixNano()-w.lastFailed.Load() < int64(Quiet) {
		return
	}
	w.down.Store(false)
	w.ended = w.clock.Now()
	held := 0
	for _, n := range w.kinds {
		held += n
	}
	w.log.Info(w.name+": reachable again", "after", w.clock.Now().Sub(w.since).Round(time.Millisecond).String(),
		"kinds", len(w.kinds), "repeats_held_back", held)
}

// Down reports whether an outage is under way.
func (w *Watch) Down() bool { return w.down.Load() }

// Handler wraps next: while an outage lasts, a record at warning level or
// above whose err is unavailable (intake.EUNAVAILABLE) passes once per
// message; the repeats are counted for the line that ends the outage.
func (w *Watch) Handler(next slog.Handler) slog.Handler { return &handler{w: w, next: next} }

type handler struct {
	w    *Watch
	next slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || !unavailable(r) {
		return h.next.Handle(ctx, r)
	}
	if h.w.down.Load() && h.w.repeat(r.Message) {
		return nil
	}
	if h.w.tail(r.Message) {
		told := slog.NewRecord(r.Time, slog.LevelInfo, r.Message, r.PC)
		r.Attrs(func(a slog.Attr) bool { told.AddAttrs(a); return true })
		told.AddAttrs(slog.String("after_outage", h.w.name))
		if !h.next.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
		return h.next.Handle(ctx, told)
	}
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{w: h.w, next: h.next.WithAttrs(as)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{w: h.w, next: h.next.WithGroup(name)}
}

// repeat reports whether msg was logged already in this outage, counting
// it if so.
func (w *Watch) repeat(msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.down.Load() {
		return false
	}
	n, seen := w.kinds[msg]
	if seen {
		w.kinds[msg] = n + 1
		return true
	}
	w.kinds[msg] = 0
	return false
}

// tail reports whether msg, logged now, is a failure of a kind the outage
// that ended less than Tail ago logged: that outage's, told late.
func (w *Watch) tail(msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down.Load() || w.ended.IsZero() || w.clock.Now().Sub(w.ended) >= Tail {
		return false
	}
	_, seen := w.kinds[msg]
	return seen
}

// unavailable reports whether r's err attribute is an unavailable error.
func unavailable(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "err" {
			return true
		}
		if err, ok := a.Value.Any().(error); ok && intake.ErrorCode(err) == intake.EUNAVAILABLE {
			found = true
		}
		return false
	})
	return found
}
