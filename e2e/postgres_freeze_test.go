package e2e

import (
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestAProcessFrozenPastItsLeasesOnPostgresDoesNothingTwice: two processes
// on one database; the consumer holds every call while webhooks arrive at
// both, then one process is frozen (SIGSTOP, as the kernel or a paused VM
// freezes it) and the consumer answers again. The other process takes the
// frozen one's leased work over once its leases run out. Thawed (SIGCONT)
// long after, the frozen process finds its results stale and drops them:
// every message is processed once and every event handled once in the
// store, every webhook reaches the consumer, and the thawed process serves
// on.
// postUntilAcked posts ids until every one is acknowledged, as a provider
// retries a webhook answered 503, and fails the test past the deadline.
func postUntilAcked(t *testing.T, p *poster, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []string
		p.mu.Lock()
		for _, id := range ids {
			if !p.acked[id] {
				left = append(left, id)
			}
		}
		p.mu.Unlock()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d webhooks not acknowledged within %v", len(left), len(ids), within)
		}
		p.post(left, 4)
	}
}

func TestAProcessFrozenPastItsLeasesOnPostgresDoesNothingTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("freezes the real binary")
	}
	// Leases of 2 s (the harness's --lease); a call's lease is the delivery
	// timeout and the lease: 22 s. The timeout outlasts the consumer's
	// hold, however slow the machine: a call timed out while held would be
	// retried by its own process, and be called twice with no takeover.
	procs, _ := onePostgres(t, 2, "--delivery-timeout", "20s")
	frozen, other := procs[0], procs[1]
	consumer := newCountingConsumer()
	defer consumer.Close()
	path := setupGitHub(t, frozen)
	var orgs struct{ Items []struct{ ID string } }
	frozen.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	frozen.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "app", "app": "app",
		"url": consumer.URL + "/app", "event_types": []string{"github.issues.*"}}, nil)

	consumer.hold()
	p := &poster{procs: procs, path: path, dead: make([]atomic.Bool, 2), acked: map[string]bool{}}
	first := deliveryIDs(0, 120)
	postUntilAcked(t, p, first, 30*time.Second)
	eventually(t, 30*time.Second, "calls from both processes held at the consumer", func() bool { return consumer.held.Load() >= 20 })

	frozen.cmd.Process.Signal(syscall.SIGSTOP)
	p.dead[0].Store(true)
	consumer.release()
	second := deliveryIDs(120, 180)
	postUntilAcked(t, p, second, 30*time.Second)
	all := append(first, second...)
	// Without the frozen process's locks given back, the rows it held in a
	// transaction are skipped by the other's claims for as long as it stays
	// frozen.
	eventually(t, 60*time.Second, "every webhook delivered while one process is frozen", func() bool { return consumer.got("/app", all) })

	// Thawed well past every lease it held: what it was doing is stale.
	frozen.cmd.Process.Signal(syscall.SIGCONT)
	p.dead[0].Store(false)
	third := deliveryIDs(180, 220)
	p = &poster{procs: []*server{frozen}, path: path, dead: make([]atomic.Bool, 1), acked: p.acked}
	postUntilAcked(t, p, third, 30*time.Second)
	all = append(all, third...)
	if n := p.ackedCount(); n != len(all) {
		t.Fatalf("%d webhooks acknowledged, want %d", n, len(all))
	}
	eventually(t, 30*time.Second, "the thawed process delivers what it is sent", func() bool { return consumer.got("/app", third) })

	processedOnce(t, other, all, 30*time.Second)
	events := everyEventDelivered(t, other, len(all), 30*time.Second)
	redelivered := 0
	for _, e := range events {
		var detail struct {
			Deliveries []struct{ Outcome string }
		}
		other.api(t, "GET", "/api/v1/events/"+e.ID, nil, &detail)
		handled := 0
		for _, d := range detail.Deliveries {
			if d.Outcome == "handled" {
				handled++
			}
		}
		if handled != 1 {
			t.Errorf("event %s has %d handled deliveries recorded, want 1", e.ID, handled)
		}
		if consumer.counts("/app")[e.ID] > 1 {
			redelivered++
		}
	}
	// A call the frozen process made before it froze is made again by the
	// other process under the same webhook-id, which the consumer dedupes
	// by; the frozen process's own result of it is refused as stale, or,
	// when the database closed the frozen process's connections meanwhile
	// (its idle transaction outlived its timeout), its settle fails on the
	// closed connection: either way the result is not applied.
	logs := frozen.logs.String()
	stale := strings.Count(logs, "lost its lease; result dropped")
	failed := strings.Count(logs, "router: settle failed; the lease will expire")
	t.Logf("%d events called again under their webhook-id after the takeover; the thawed process dropped %d stale results and failed to settle %d",
		redelivered, stale, failed)
	if redelivered > 0 && stale+failed == 0 {
		t.Errorf("%d events were called again, yet the thawed process neither dropped a stale result nor failed a settle", redelivered)
	}
}
