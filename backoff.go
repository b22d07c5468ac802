package intake

import (
	"math/rand/v2"
	"time"
)

// Backoff schedules retries: attempt n+1 is due about Base·4^(n−1) after
// attempt n fails, with ±Jitter of that spread at random.
type Backoff struct {
	Base   time.Duration
	Jitter float64 // fraction, 0.2 = ±20 %
	Max    time.Duration
}

// DefaultBackoff is the production schedule: 10 s, 40 s, 160 s, … with ±20 %.
var DefaultBackoff = Backoff{Base: 10 * time.Second, Jitter: 0.2, Max: 6 * time.Hour}

// Delay returns how long to wait after the failed attempt n (1-based).
func (b Backoff) Delay(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := b.Base
	for i := 1; i < n && (b.Max == 0 || d < b.Max); i++ {
		d *= 4
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * b.Jitter * float64(d))
	}
	return d
}
