package intake_test

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func TestPageLimitDefaultsAndCaps(t *testing.T) {
	for n, want := range map[int]int{-1: 50, 0: 50, 1: 1, 500: 500, 501: 500} {
		if got := intake.PageLimit(n); got != want {
			t.Errorf("PageLimit(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestKeysetPageTrimsTheExtraRowAndPointsPastTheLastKept(t *testing.T) {
	items := []intake.Event{{ID: "c"}, {ID: "b"}, {ID: "a"}}
	p := intake.KeysetPage(items, 2)
	if len(p.Items) != 2 || p.NextCursor != "b" {
		t.Fatalf("page = %+v", p)
	}
	if p := intake.KeysetPage(items, 3); len(p.Items) != 3 || p.NextCursor != "" {
		t.Fatalf("last page = %+v", p)
	}
}

func TestRerouteFollowsTheTransitionTableAndStartsAFreshBudget(t *testing.T) {
	for _, st := range intake.EventStates {
		max, err := intake.Reroute(st, 7)
		allowed := intake.CheckEventTransition(st, intake.EventPending) == nil
		switch {
		case allowed && (err != nil || max != 7+intake.DefaultMaxAttempts):
			t.Errorf("re-route of %s: %d %v", st, max, err)
		case !allowed && intake.ErrorCode(err) != intake.ECONFLICT:
			t.Errorf("re-route of %s: %v, want conflict", st, err)
		}
	}
}

func TestClaimBodiesLeavesAMessageWithoutABodyExpired(t *testing.T) {
	claims := []intake.Claim{{Message: intake.Message{ID: "a"}}, {Message: intake.Message{ID: "b"}}, {Message: intake.Message{ID: "c"}}}
	b := intake.NewClaimBodies(claims)
	if err := b.Fill("a", []byte(`{"X-Test":["1"]}`), []byte("body"), ""); err != nil {
		t.Fatal(err)
	}
	key := intake.BlobKey(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), "c")
	if err := b.Fill("c", []byte(`{}`), nil, key); err != nil {
		t.Fatal(err)
	}
	if m := claims[0].Message; m.BodyExpired || string(m.Body) != "body" || m.BlobKey != "" || m.Header.Get("X-Test") != "1" {
		t.Fatalf("filled = %+v", m)
	}
	if !claims[1].Message.BodyExpired {
		t.Fatal("a message whose body was not found is not marked expired")
	}
	if m := claims[2].Message; m.BodyExpired || m.Body != nil || m.BlobKey != "bodies/2026/11/30/12/c" {
		t.Fatalf("a body in object storage filled as %+v, want its key", m)
	}
}
