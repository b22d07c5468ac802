package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/changes"
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

func TestAChangeVoidsEveryEntryLoadedBeforeIt(t *testing.T) {
	var changed changes.Counter
	c := TTL[string, int]{TTL: time.Hour, Changes: &changed}
	t0 := time.Unix(0, 0)
	loads := 0
	load := func() (int, error) { loads++; return loads, nil }
	c.Get("a", t0, load)
	c.Get("b", t0, load)
	if v, _ := c.Get("a", t0, load); v != 1 || loads != 2 {
		t.Fatalf("before the change = %d after %d loads", v, loads)
	}
	changed.Move()
	if v, _ := c.Get("a", t0, load); v != 3 {
		t.Fatalf("a after the change = %d, want a fresh load", v)
	}
	if v, _ := c.Get("b", t0, load); v != 4 {
		t.Fatalf("b after the change = %d, want a fresh load", v)
	}
	if v, _ := c.Get("a", t0, load); v != 3 || loads != 4 {
		t.Fatalf("a reloaded after the change is not reused: %d after %d loads", v, loads)
	}
}

func TestAValueLoadedAcrossAChangeServesOnlyItsCaller(t *testing.T) {
	var changed changes.Counter
	c := TTL[string, string]{TTL: time.Hour, Changes: &changed}
	t0 := time.Unix(0, 0)
	// The change commits while the load reads the old row.
	v, err := c.Get("a", t0, func() (string, error) { changed.Move(); return "old", nil })
	if err != nil || v != "old" {
		t.Fatalf("the caller got %q, %v", v, err)
	}
	if v, _ := c.Get("a", t0, func() (string, error) { return "new", nil }); v != "new" {
		t.Fatalf("the next lookup got %q: a value loaded across a change was kept", v)
	}
}
