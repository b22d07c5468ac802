package router_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
)

// TestARotatedSecretSignsBesideTheOldUntilTheOverlapEnds: after a rotation
// a delivery verifies under the old secret and under the new one; once the
// overlap ends, only under the new.
func TestARotatedSecretSignsBesideTheOldUntilTheOverlapEnds(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	c, oldSecret := e.consumer(t, "billing", url, false, "stripe.*")
	newSecret := delivery.NewSecret()
	if err := e.store.RotateConsumerSecret(context.Background(), intake.Scope{}, c.ID, e.sealer.Seal([]byte(newSecret), []byte(c.ID)),
		c.SealedSecret, e.clock.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	verifies := func(i int, secret string) bool {
		req, body := rec.got[i], rec.bodies[i]
		want, err := delivery.Sign(secret, req.Header.Get("webhook-id"), mustAtoi(t, req.Header.Get("webhook-timestamp")), body)
		if err != nil {
			t.Fatal(err)
		}
		for _, sig := range strings.Fields(req.Header.Get("webhook-signature")) {
			if sig == want {
				return true
			}
		}
		return false
	}
	e.event(t, "stripe.invoice.paid")
	e.run(t)
	if rec.calls() != 1 || !verifies(0, oldSecret) || !verifies(0, newSecret) {
		t.Fatalf("during the overlap the delivery must verify under both secrets: %q", rec.got[0].Header.Get("webhook-signature"))
	}
	e.clock.Advance(24*time.Hour + time.Second)
	e.event(t, "stripe.invoice.paid")
	e.run(t)
	if rec.calls() != 2 || verifies(1, oldSecret) || !verifies(1, newSecret) {
		t.Fatalf("after the overlap only the new secret may verify: %q", rec.got[1].Header.Get("webhook-signature"))
	}
	if n := len(strings.Fields(rec.got[1].Header.Get("webhook-signature"))); n != 1 {
		t.Fatalf("%d signatures after the overlap, want 1", n)
	}
}
