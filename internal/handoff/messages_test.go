package handoff

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestTheHandoffLeavesRoomForAnotherOrgWhileOneFloods(t *testing.T) {
	h := NewMessages(8, time.Minute)
	reserve := func(org string) bool { return h.Reserve(&intake.Message{OrgID: org, ReceivedAt: t0}) }
	n := 0
	for reserve("b") {
		n++
	}
	if n != 6 {
		t.Fatalf("a lone org reserved %d of 8, want three quarters (6)", n)
	}
	if !reserve("a") {
		t.Fatal("another org found no room while the first flooded")
	}
	if !reserve("a") || reserve("a") {
		t.Fatal("the second org should reach the 2 places left and no more")
	}
	h.Taken("b")
	if reserve("b") {
		t.Fatal("the flooding org took room back over its share of 3 while another org holds some")
	}
	h.Taken("a")
	h.Taken("a")
	if !reserve("b") {
		t.Fatal("room freed by the other org, now holding none, is the flooding org's again")
	}
}
