package cache

import (
	"testing"
	"time"

	"github.com/intakehq/intake/internal/changes"
)

// BenchmarkHitCheckingChanges is the cost of a cached lookup that also
// checks the store's change counter, as ingress pays on every webhook.
func BenchmarkHitCheckingChanges(b *testing.B) {
	c := TTL[string, int]{TTL: time.Hour, Changes: &changes.Counter{}}
	now := time.Unix(0, 0)
	load := func() (int, error) { return 1, nil }
	c.Get("endpoint", now, load)
	b.ReportAllocs()
	for b.Loop() {
		c.Get("endpoint", now, load)
	}
}
