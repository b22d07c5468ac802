package handoff

import "testing"

func TestCallsGivenWakeTheRouterOnceAndAreTakenInOrder(t *testing.T) {
	c := NewCalls()
	c.Give(Settled{OrgID: "a"})
	c.Give(Settled{OrgID: "b"})
	select {
	case <-c.Ready():
	default:
		t.Fatal("a settle given did not wake the router")
	}
	select {
	case <-c.Ready():
		t.Fatal("two settles woke the router twice; wake-ups are coalesced")
	default:
	}
	got := c.Take()
	if len(got) != 2 || got[0].OrgID != "a" || got[1].OrgID != "b" {
		t.Fatalf("took %+v, want a then b", got)
	}
	if len(c.Take()) != 0 {
		t.Fatal("a second take found settles already taken")
	}
	var none *Calls
	if none.Ready() != nil || none.Take() != nil {
		t.Fatal("a nil hand-off yields something")
	}
}
