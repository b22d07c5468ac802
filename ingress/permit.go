package ingress

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/intakehq/intake"
)

// Permits decides whether an endpoint may take one more request now. When
// it fails, ingress admits: refusing a provider's webhook because the
// limiter broke would lose data some providers never resend.
type Permits interface {
	Allow(ep intake.Endpoint, now time.Time) (ok bool, retryAfter time.Duration, err error)
}

// LocalPermits is a token bucket per endpoint in this process's memory.
type LocalPermits struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// Allow takes a token from the endpoint's bucket, following changes to its
// rate and burst.
func (p *LocalPermits) Allow(ep intake.Endpoint, now time.Time) (bool, time.Duration, error) {
	if ep.RatePerSec <= 0 {
		return true, 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buckets == nil {
		p.buckets = map[string]*rate.Limiter{}
	}
	l := p.buckets[ep.ID]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(ep.RatePerSec), ep.Burst)
		p.buckets[ep.ID] = l
	} else if l.Limit() != rate.Limit(ep.RatePerSec) || l.Burst() != ep.Burst {
		l.SetLimitAt(now, rate.Limit(ep.RatePerSec))
		l.SetBurstAt(now, ep.Burst)
	}
	r := l.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second, nil
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d, nil
	}
	return true, 0, nil
}
