package intake

import (
	"testing"

	"github.com/intakehq/intake/internal/fair"
)

func TestCallSharesBoundEachOrgAndConsumerAndLeaveRoomForTheNextOrg(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shares   CallShares
		org, con string
		ctl      Controls
		want     int
	}{
		{"no share: the total", Calls(10), "a", "c1", Controls{}, 10},
		{"a lone org: three quarters of the slots", CallShares{Total: 256, Slots: 256, Share: fair.ShareOf[int]}, "a", "c1", Controls{}, 192},
		{"the org holding some: three quarters less what it holds", CallShares{Total: 200, Slots: 256, Share: fair.ShareOf[int], Org: map[string]int{"a": 100}}, "a", "c1", Controls{}, 92},
		{"an org at its share: none", CallShares{Total: 64, Slots: 256, Share: fair.ShareOf[int], Org: map[string]int{"b": 192}}, "b", "c1", Controls{}, 0},
		{"a new org while another holds: three eighths", CallShares{Total: 128, Slots: 256, Share: fair.ShareOf[int], Org: map[string]int{"b": 128}}, "a", "c1", Controls{}, 96},
		{"a third org while two hold: a quarter", CallShares{Total: 100, Slots: 256, Share: fair.ShareOf[int], Org: map[string]int{"b": 96, "c": 60}}, "a", "c1", Controls{}, 64},
		{"no share per org without a Share", CallShares{Total: 256, Slots: 256}, "a", "c1", Controls{}, 256},
		{"a consumer's default share", CallShares{Total: 256, Slots: 256, ConsumerShare: 64}, "a", "c1", Controls{}, 64},
		{"a consumer holding some", CallShares{Total: 256, Slots: 256, ConsumerShare: 64, Org: map[string]int{"a": 60}, Consumer: map[string]int{"c1": 60}}, "a", "c1", Controls{}, 4},
		{"another consumer of the org", CallShares{Total: 256, Slots: 256, ConsumerShare: 64, Org: map[string]int{"a": 60}, Consumer: map[string]int{"c1": 60}}, "a", "c2", Controls{}, 64},
		{"a consumer's own max_in_flight replaces the default", CallShares{Total: 256, Slots: 256, ConsumerShare: 64}, "a", "c1", Controls{MaxInFlight: 100}, 100},
		{"and may lower it", CallShares{Total: 256, ConsumerShare: 64}, "a", "c1", Controls{MaxInFlight: 3}, 3},
		{"never more than the total", CallShares{Total: 5, Slots: 256, ConsumerShare: 64}, "a", "c1", Controls{}, 5},
		{"nothing left", CallShares{Slots: 256}, "a", "c1", Controls{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.shares.Allow(tc.org, tc.con, tc.ctl, 1000); got != tc.want {
				t.Fatalf("Allow = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCallSharesCountWhatAClaimTook(t *testing.T) {
	s := CallShares{Total: 10, Slots: 8, Share: fair.ShareOf[int], ConsumerShare: 3}
	if n := s.Allow("a", "c1", Controls{}, 10); n != 3 {
		t.Fatalf("first consumer: %d, want its share of 3", n)
	}
	s.Took("a", "c1", 3)
	if n := s.Allow("a", "c2", Controls{}, 10); n != 3 {
		t.Fatalf("second consumer of the org: %d, want the 3 left of the org's share of 6", n)
	}
	s.Took("a", "c2", 3)
	if n := s.Allow("b", "c3", Controls{}, 10); n != 3 {
		t.Fatalf("another org: %d, want three eighths of the slots (3)", n)
	}
	s.Took("b", "c3", 3)
	if s.Total != 1 {
		t.Fatalf("total left %d, want 1", s.Total)
	}
}
