package intake_test

import (
	"fmt"

	"github.com/intakehq/intake"
)

// Every state change of a message goes through its transition table: a
// processed message is never processed again, and a dead one never becomes
// processed.
func ExampleCheckMessageTransition() {
	fmt.Println(intake.CheckMessageTransition(intake.MessageQueued, intake.MessageProcessing) == nil)
	fmt.Println(intake.CheckMessageTransition(intake.MessageFailed, intake.MessageProcessing) == nil)
	fmt.Println(intake.ErrorCode(intake.CheckMessageTransition(intake.MessageProcessed, intake.MessageProcessing)))
	fmt.Println(intake.ErrorCode(intake.CheckMessageTransition(intake.MessageDead, intake.MessageProcessed)))
	// Output:
	// true
	// true
	// invalid
	// invalid
}

// An operator may take a dead or unclaimed event back to pending, never a
// delivered one.
func ExampleCheckEventTransition() {
	for _, from := range []intake.EventState{intake.EventDead, intake.EventNoConsumer, intake.EventDelivered} {
		fmt.Println(from, "→ pending:", intake.CheckEventTransition(from, intake.EventPending) == nil)
	}
	// Output:
	// dead → pending: true
	// no_consumer → pending: true
	// delivered → pending: false
}

// Deduplication judges a message's identity against the one already
// recorded: the same body again is a duplicate, the same provider id with
// other content a conflict.
func ExampleJudge() {
	prior := &intake.Identity{Key: "evt_1", Digest: "d1", EventType: "stripe.invoice.paid"}
	fmt.Printf("%q\n", intake.Judge(nil, *prior))
	fmt.Printf("%q\n", intake.Judge(prior, intake.Identity{Key: "evt_1", Digest: "d1", EventType: "stripe.invoice.paid"}))
	fmt.Printf("%q\n", intake.Judge(prior, intake.Identity{Key: "evt_1", Digest: "d2", EventType: "stripe.invoice.paid"}))
	// Output:
	// ""
	// "duplicate"
	// "conflict"
}
