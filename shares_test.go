package intake

import "testing"

func TestCallSharesBoundEachOrgAndConsumerAndLeaveRoomForTheNextOrg(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shares   CallShares
		org, con string
		ctl      Controls
		want     int
	}{
		{"no share: the total", Calls(10), "a", "c1", Controls{}, 10},
		{"a lone org: half the slots", CallShares{Total: 256, Slots: 256}, "a", "c1", Controls{}, 128},
		{"the org holding some: half less what it holds", CallShares{Total: 200, Slots: 256, Org: map[string]int{"a": 100}}, "a", "c1", Controls{}, 28},
		{"an org at its share: none", CallShares{Total: 128, Slots: 256, Org: map[string]int{"b": 128}}, "b", "c1", Controls{}, 0},
		{"a new org while another holds: a third", CallShares{Total: 128, Slots: 256, Org: map[string]int{"b": 128}}, "a", "c1", Controls{}, 85},
		{"a third org while two hold: a quarter", CallShares{Total: 43, Slots: 256, Org: map[string]int{"b": 128, "c": 85}}, "a", "c1", Controls{}, 43},
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
	s := CallShares{Total: 10, Slots: 8, ConsumerShare: 3}
	if n := s.Allow("a", "c1", Controls{}, 10); n != 3 {
		t.Fatalf("first consumer: %d, want its share of 3", n)
	}
	s.Took("a", "c1", 3)
	if n := s.Allow("a", "c2", Controls{}, 10); n != 1 {
		t.Fatalf("second consumer of the org: %d, want the 1 left of the org's share of 4", n)
	}
	s.Took("a", "c2", 1)
	if n := s.Allow("b", "c3", Controls{}, 10); n != 2 {
		t.Fatalf("another org: %d, want a third of the slots (2)", n)
	}
	s.Took("b", "c3", 2)
	if s.Total != 4 {
		t.Fatalf("total left %d, want 4", s.Total)
	}
}
