package clock

import (
	"testing"
	"time"
)

func TestAClockMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c := New(t0)
	if c.Now() != t0 || c.Now() != t0 {
		t.Fatal("a clock moved by being read")
	}
	c.Advance(time.Minute)
	if c.Now() != t0.Add(time.Minute) {
		t.Fatalf("advanced a minute: %s", c.Now())
	}
	c.Set(t0)
	c.Tick(3 * time.Millisecond)
	if a, b := c.Now(), c.Now(); a != t0.Add(3*time.Millisecond) || b.Sub(a) != 3*time.Millisecond {
		t.Fatalf("ticking reads: %s, %s", a, b)
	}
	c.Tick(0)
	if c.Now() != c.Now() {
		t.Fatal("a clock whose tick stopped still moves")
	}
}
