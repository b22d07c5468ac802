package fair

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestShareLeavesAQuarterForAHolderStillToCome(t *testing.T) {
	for _, c := range []struct{ capacity, others, want int64 }{
		{256, 0, 192}, {256, 1, 96}, {256, 2, 64}, {4, 0, 3}, {4, 1, 1}, {4, 9, 1}, {1, 0, 1}, {0, 0, 1}, {10, 0, 8},
	} {
		if got := Share(c.capacity, c.others); got != c.want {
			t.Errorf("Share(%d, %d) = %d, want %d", c.capacity, c.others, got, c.want)
		}
	}
}

// ShareOf counts the others as the holders in held but holder itself:
// the same share whether holder holds some yet or not.
func TestShareOfCountsTheOtherHoldersOnly(t *testing.T) {
	for _, c := range []struct {
		name     string
		capacity int64
		held     map[string]int
		holder   string
		want     int64
	}{
		{"alone, nothing held", 256, nil, "a", 192},
		{"alone, holding some", 256, map[string]int{"a": 100}, "a", 192},
		{"a newcomer beside one", 256, map[string]int{"b": 128}, "a", 96},
		{"holding some beside one", 256, map[string]int{"a": 1, "b": 128}, "a", 96},
		{"a newcomer beside two", 256, map[string]int{"b": 96, "c": 60}, "a", 64},
		{"beside more than the room: at least one", 4, map[string]int{"b": 1, "c": 1, "d": 1, "e": 1}, "a", 1},
		{"the notifier's default beside five", 32, map[string]int{"b": 4, "c": 4, "d": 4, "e": 4, "f": 4}, "a", 4},
		{"the notifier's default beside six", 32, map[string]int{"b": 4, "c": 4, "d": 4, "e": 4, "f": 4, "g": 4}, "a", 3},
		{"alone, a capacity not a multiple of four: the quarter left rounds down", 10, nil, "a", 8},
		{"beside one, a capacity not a multiple of four", 10, map[string]int{"b": 3}, "a", 4},
	} {
		if got := ShareOf(c.capacity, c.held, c.holder); got != c.want {
			t.Errorf("%s: ShareOf(%d, %v, %q) = %d, want %d", c.name, c.capacity, c.held, c.holder, got, c.want)
		}
		held64 := map[string]int64{}
		for h, n := range c.held {
			held64[h] = int64(n)
		}
		if got := ShareOf(c.capacity, held64, c.holder); got != c.want {
			t.Errorf("%s, counted in int64: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestBudgetRefusesAnOrgPastItsOwnBoundAndAdmitsAnother(t *testing.T) {
	b := &Budget{What: "searches", PerOrg: 2}
	ctx := context.Background()
	r1, err1 := b.Take(ctx, "a", 1)
	r2, err2 := b.Take(ctx, "a", 1)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err := b.Take(ctx, "a", 1)
	var busy *Busy
	if !errors.As(err, &busy) || busy.What != "searches" || busy.RetryAfter < time.Second {
		t.Fatalf("third of org a: %v, want *Busy naming searches with a Retry-After", err)
	}
	rb, err := b.Take(ctx, "b", 1)
	if err != nil {
		t.Fatalf("org b while a is at its bound: %v", err)
	}
	r1()
	r1() // a release is idempotent
	if got := b.Held("a"); got != 1 {
		t.Fatalf("a holds %d after one release, want 1", got)
	}
	r2()
	rb()
	if got := b.Held(""); got != 0 {
		t.Fatalf("all released, held %d", got)
	}
}

func TestBudgetSharesItsTotalBetweenOrgs(t *testing.T) {
	b := &Budget{What: "body memory", Total: 100}
	ctx := context.Background()
	if _, err := b.Take(ctx, "a", 75); err != nil { // alone: three quarters
		t.Fatal(err)
	}
	if _, err := b.Take(ctx, "a", 1); err == nil {
		t.Fatal("org a took past three quarters of the total while alone")
	}
	if _, err := b.Take(ctx, "b", 25); err != nil {
		t.Fatalf("org b found no room beside a: %v", err)
	}
	if _, err := b.Take(ctx, "c", 1); err == nil {
		t.Fatal("took past the total")
	}
}

// One large taker (a 64 MiB body's processing) is larger than an org's
// share beside another org that holds a little (small bodies at ingress),
// and the org holds a little itself (its next bodies being read). One such
// taker at a time per org is taken while the room is free, up to what the
// org could hold alone, rather than never; a second waits for the first.
func TestBudgetTakesOneLargeTakerPerOrgPastItsShareWhileTheRoomIsFree(t *testing.T) {
	b := &Budget{What: "body memory", Total: 100}
	ctx := context.Background()
	if _, err := b.Take(ctx, "a", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Take(ctx, "b", 2); err != nil {
		t.Fatal(err)
	}
	// All b could hold alone, past Share(100, 1) = 37, beside its own 2.
	release, err := b.Take(ctx, "b", 75)
	if err != nil {
		t.Fatalf("org b could not take 75 of the 88 free beside a's 10: %v", err)
	}
	if _, err := b.Take(ctx, "b", 3); err == nil {
		t.Fatal("org b took a small taker past its share beside a")
	}
	release()
	if _, err := b.Take(ctx, "b", 76); err == nil {
		t.Fatal("org b took a taker larger than it could hold alone")
	}
	if _, err := b.Take(ctx, "b", 40); err != nil {
		t.Fatalf("org b's next large taker, the first given back: %v", err)
	}
	if _, err := b.Take(ctx, "b", 38); err == nil {
		t.Fatal("org b took a second large taker past its share while its first is held")
	}
	if _, err := b.Take(ctx, "c", 49); err == nil {
		t.Fatal("took past the total")
	}
}

func TestBudgetRefusesAtOnceWhatCouldNeverFit(t *testing.T) {
	b := &Budget{What: "body memory", Total: 100, Wait: time.Hour}
	_, err := b.Take(context.Background(), "a", 80)
	var busy *Busy
	if !errors.As(err, &busy) {
		t.Fatalf("80 of a total of 100 (an org's share alone is 75): %v, want *Busy at once", err)
	}
}

func TestBudgetWaiterTakesRoomGivenBackWithinItsWait(t *testing.T) {
	b := &Budget{What: "searches", PerOrg: 1, Wait: time.Hour}
	ctx := context.Background()
	release, err := b.Take(ctx, "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := b.Take(ctx, "a", 1)
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("the waiter was refused after room was given back: %v", err)
	}
}

func TestBudgetWaiterEndsWithItsContext(t *testing.T) {
	b := &Budget{What: "searches", PerOrg: 1, Wait: time.Hour}
	if _, err := b.Take(context.Background(), "a", 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Take(ctx, "a", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting with an ended context: %v", err)
	}
}

// TestBudgetTryTakeHoldsWhatFitsAndRefusesTheRestWithoutWaiting: what
// fits is held until given back; what does not is refused at once, even
// with a long Wait, and holds nothing.
func TestBudgetTryTakeHoldsWhatFitsAndRefusesTheRestWithoutWaiting(t *testing.T) {
	b := &Budget{What: "body memory", PerOrg: 10, Wait: time.Hour}
	release, ok := b.TryTake("a", 8)
	if !ok || b.Held("a") != 8 {
		t.Fatalf("8 of an org's 10: ok %v, held %d; want it held", ok, b.Held("a"))
	}
	if _, ok := b.TryTake("a", 3); ok || b.Held("a") != 8 {
		t.Fatalf("3 more beside 8 of 10: ok %v, held %d; want it refused, nothing more held", ok, b.Held("a"))
	}
	release()
	if r, ok := b.TryTake("a", 3); !ok || b.Held("a") != 3 {
		t.Fatalf("3 once the 8 were given back: ok %v, held %d; want it held", ok, b.Held("a"))
	} else {
		r()
	}
	if _, ok := (*Budget)(nil).TryTake("a", 1<<40); !ok {
		t.Fatal("a nil budget refused a taker")
	}
}

func TestNilBudgetAdmitsEverything(t *testing.T) {
	var b *Budget
	release, err := b.Take(context.Background(), "a", 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	release()
}

func TestRatesPaceEachOrgOnItsOwn(t *testing.T) {
	r := &Rates{What: "tests", Every: 1, Burst: 2}
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	for i := range 2 {
		if err := r.Allow("a", now); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
	}
	var busy *Busy
	if err := r.Allow("a", now); !errors.As(err, &busy) || busy.RetryAfter != time.Second {
		t.Fatalf("past the burst: %v, want *Busy retrying after 1s", err)
	}
	if err := r.Allow("b", now); err != nil {
		t.Fatalf("org b paced by org a: %v", err)
	}
	if err := r.Allow("a", now.Add(time.Second)); err != nil {
		t.Fatalf("a second later: %v", err)
	}
}

func TestRatesSpendGoesIntoDebtAndWaitsItOut(t *testing.T) {
	r := &Rates{What: "events", Every: 1000, Burst: 5000}
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if d := r.Spend("b", 5000, now); d != 0 {
		t.Fatalf("the burst itself: wait %v, want none", d)
	}
	if d := r.Spend("b", 1000, now); d != time.Second {
		t.Fatalf("a thousand past the burst at 1000/s: wait %v, want 1s", d)
	}
	if w := r.Wait("b", now.Add(500*time.Millisecond)); w != 500*time.Millisecond {
		t.Fatalf("half-way: wait %v, want 500ms", w)
	}
	if w := r.Wait("b", now.Add(time.Second)); w != 0 {
		t.Fatalf("after the debt: wait %v", w)
	}
	if w := r.Wait("a", now); w != 0 {
		t.Fatalf("org a waits for b's debt: %v", w)
	}
}
