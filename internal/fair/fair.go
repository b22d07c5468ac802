// Package fair shares the process's bounded resources between orgs (DESIGN
// §18, §26): one formula for an org's share of anything (Share), a budget
// of concurrency or bytes per org with a server-wide total (Budget), and a
// rate per org (Rates). Every door a tenant or an anonymous caller can
// drive, and every stage of the pipeline that holds slots, takes its bound
// from here, so isolation is one rule rather than a list.
package fair

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Share is the most of capacity one holder may hold while others other
// holders hold some: three quarters of it divided among them and itself,
// so that a quarter is always left for a holder still to come. At least 1.
func Share(capacity, others int64) int64 {
	return max(1, (capacity-capacity/4)/(others+1))
}

// ShareOf is the most of capacity holder may hold now (Share): held
// counts what each holder holds, a holder holding none not in it, and the
// others are those in it but holder. Every count of an org's share of a
// capacity among the orgs holding some is this one: the hand-off room, the
// script hosts, the call slots, the notifier and Budget.
func ShareOf[V int | int64](capacity int64, held map[string]V, holder string) int64 {
	others := int64(len(held))
	if held[holder] > 0 {
		others--
	}
	return Share(capacity, others)
}

// Busy is a budget refusing more for now: the caller answers 429 (or 503)
// with Retry-After.
type Busy struct {
	// What names the budget, e.g. "searches".
	What string
	// RetryAfter is when trying again is worth it.
	RetryAfter time.Duration
}

func (e *Busy) Error() string { return "fair: " + e.What + " budget spent" }

// Budget bounds what is held at once, in units (calls, bytes): at most
// Total in all, each org at most its Share of it and at most PerOrg. A
// taker that does not fit waits up to Wait for room, in its org's turn,
// then is refused with *Busy. The zero Budget bounds nothing; a nil
// *Budget admits everything.
type Budget struct {
	What   string        // names it in errors: "searches", "body memory"
	Total  int64         // 0: no server-wide bound (nor shares)
	PerOrg int64         // 0: no bound but the share
	Wait   time.Duration // how long a taker may wait for room

	mu      sync.Mutex
	held    int64
	orgs    map[string]int64
	over    map[string]int // takers past their org's share beside others
	changed chan struct{}  // closed and replaced whenever room is given back
}

// Take holds n units for org until release is called, waiting up to Wait
// (or ctx's end) for room. A taker larger than org could ever hold is
// refused at once.
func (b *Budget) Take(ctx context.Context, org string, n int64) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	var deadline <-chan time.Time
	for {
		b.mu.Lock()
		release, never := b.take(org, n)
		if release != nil {
			b.mu.Unlock()
			return release, nil
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		if never || b.Wait <= 0 {
			return nil, b.busy()
		}
		if deadline == nil {
			t := time.NewTimer(b.Wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-deadline:
			return nil, b.busy()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TryTake holds n units for org until release is called if they fit now;
// ok is false, and nothing held, when they do not.
func (b *Budget) TryTake(org string, n int64) (release func(), ok bool) {
	if b == nil {
		return func() {}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	release, _ = b.take(org, n)
	return release, release != nil
}

// take holds n units for org if they fit now, returning what gives them
// back (nil when they do not fit) and whether they never could; b.mu is
// held.
func (b *Budget) take(org string, n int64) (release func(), never bool) {
	fits, never, over := b.fits(org, n)
	if !fits {
		return nil, never
	}
	b.hold(org, n, over)
	var once sync.Once
	return func() { once.Do(func() { b.give(org, n, over) }) }, never
}

// Held is how much org holds now ("" for all orgs together).
func (b *Budget) Held(org string) int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if org == "" {
		return b.held
	}
	return b.orgs[org]
}

// fits reports whether org may take n more now, whether it never could,
// even alone, and whether it is taken past org's share beside others; b.mu
// is held. One taker at a time per org may go past that share while the
// room is free: itself at most what the org could hold alone, beside the
// org's smaller takers of at most a sixteenth of the total. So a taker
// larger than an org's share beside others (one large body's processing,
// beside the org's next bodies being read and other orgs' bodies) is
// taken in time rather than never, and most of the quarter kept for a
// holder still to come is kept all the same.
func (b *Budget) fits(org string, n int64) (fits, never, over bool) {
	alone, limit := b.limit(nil, org), b.limit(b.orgs, org)
	never = n > alone
	room := b.Total <= 0 || b.held+n <= b.Total
	if b.orgs[org]+n <= limit {
		return room, never, false
	}
	over = n > limit && b.over[org] == 0
	return room && over && n <= alone && b.orgs[org]+n <= alone+b.Total/16, never, over
}

// limit is the most org may hold beside the orgs holding some in held (nil:
// alone).
func (b *Budget) limit(held map[string]int64, org string) int64 {
	limit := int64(math.MaxInt64)
	if b.PerOrg > 0 {
		limit = b.PerOrg
	}
	if b.Total > 0 {
		limit = min(limit, ShareOf(b.Total, held, org))
	}
	return limit
}

func (b *Budget) hold(org string, n int64, over bool) {
	if b.orgs == nil {
		b.orgs, b.over = map[string]int64{}, map[string]int{}
	}
	b.held += n
	b.orgs[org] += n
	if over {
		b.over[org]++
	}
}

func (b *Budget) give(org string, n int64, over bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if b.orgs[org] -= n; b.orgs[org] <= 0 {
		delete(b.orgs, org)
	}
	if over {
		if b.over[org]--; b.over[org] <= 0 {
			delete(b.over, org)
		}
	}
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// busy is the refusal; Retry-After is the wait a taker was allowed, at
// least a second.
func (b *Budget) busy() *Busy {
	return &Busy{What: b.What, RetryAfter: max(time.Second, b.Wait)}
}

// Rates paces what each org does per second with a token bucket of its own
// (golang.org/x/time/rate): Every units a second, Burst at once. A nil
// *Rates, or one with Every ≤ 0, paces nothing.
type Rates struct {
	What  string
	Every float64 // units a second per org
	Burst int

	mu   sync.Mutex
	orgs map[string]*rate.Limiter
}

// limiter is org's bucket, made on first use.
func (r *Rates) limiter(org string) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orgs == nil {
		r.orgs = map[string]*rate.Limiter{}
	}
	l := r.orgs[org]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(r.Every), max(1, r.Burst))
		r.orgs[org] = l
	}
	return l
}

// Allow takes one unit for org at now if its bucket has one; else it
// returns *Busy with when the next unit comes.
func (r *Rates) Allow(org string, now time.Time) error {
	if r == nil || r.Every <= 0 {
		return nil
	}
	l := r.limiter(org)
	if l.AllowN(now, 1) {
		return nil
	}
	res := l.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	res.CancelAt(now)
	return &Busy{What: r.What, RetryAfter: max(time.Second, wait)}
}

// Spend takes n units for org at now, going into debt if it must (n above
// the burst counts as the burst), and returns how long org must wait from
// now until it is out of debt: zero while it is within its rate.
func (r *Rates) Spend(org string, n int, now time.Time) time.Duration {
	if r == nil || r.Every <= 0 || n <= 0 {
		return 0
	}
	l := r.limiter(org)
	return l.ReserveN(now, min(n, l.Burst())).DelayFrom(now)
}

// Tokens is how many units org's bucket holds at now: negative while it
// is in debt, +Inf when r paces nothing.
func (r *Rates) Tokens(org string, now time.Time) float64 {
	if r == nil || r.Every <= 0 {
		return math.Inf(1)
	}
	return r.limiter(org).TokensAt(now)
}

// Wait is how long org must wait from now before its bucket has a unit
// again: zero when it has one.
func (r *Rates) Wait(org string, now time.Time) time.Duration {
	if r == nil || r.Every <= 0 {
		return 0
	}
	r.mu.Lock()
	l := r.orgs[org]
	r.mu.Unlock()
	if l == nil || l.TokensAt(now) >= 0 {
		return 0
	}
	return time.Duration(-l.TokensAt(now) / r.Every * float64(time.Second))
}
