package cache

import (
	"errors"
	"testing"
	"time"
)

func TestValuesAreReusedUntilTheTTLAndErrorsAreNotCached(t *testing.T) {
	c := TTL[string, int]{TTL: time.Second, Max: 2}
	t0 := time.Unix(0, 0)
	loads := 0
	load := func() (int, error) { loads++; return loads, nil }
	if v, _ := c.Get("a", t0, load); v != 1 {
		t.Fatalf("first = %d", v)
	}
	if v, _ := c.Get("a", t0.Add(999*time.Millisecond), load); v != 1 || loads != 1 {
		t.Fatalf("within TTL = %d after %d loads", v, loads)
	}
	if v, _ := c.Get("a", t0.Add(time.Second), load); v != 2 {
		t.Fatalf("after TTL = %d", v)
	}
	if _, err := c.Get("b", t0, func() (int, error) { return 0, errors.New("down") }); err == nil {
		t.Fatal("error swallowed")
	}
	if v, _ := c.Get("b", t0, load); v != 3 {
		t.Fatalf("an error was cached: %d", v)
	}
	c.Get("c", t0, load) // past Max: starts over
	if v, _ := c.Get("a", t0.Add(time.Second), load); v != 5 {
		t.Fatalf("after overflow = %d", v)
	}
}
