package sweeper_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/sweeper"
)

func TestRetentionDropsBodiesThenRowsAndDuplicatesStayRecognised(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	c := testkit.NewClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: c.Now()}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "stripe", Name: "s", CreatedAt: c.Now()}
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: []byte("t"), Enabled: true,
		MaxBodyBytes: 1024, CreatedAt: c.Now()}
	for _, err := range []error{s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("k")}), s.CreateConnection(ctx, conn), s.CreateEndpoint(ctx, ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// process stores and settles one Stripe event the way the worker does.
	process := func(eventID string) intake.Settled {
		t.Helper()
		body := fmt.Sprintf(`{"id":%q}`, eventID)
		sum := sha256.Sum256([]byte(body))
		m := &intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
			Header: http.Header{}, Body: []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: c.Now(),
			State: intake.MessageQueued, MaxAttempts: 6, NextAttemptAt: c.Now()}
		if err := s.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
		claims, err := s.ClaimMessages(ctx, c.Now(), time.Minute, 1)
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim %v %d", err, len(claims))
		}
		id, _ := intake.IdentityFor(m, eventID, "stripe.x", intake.KindEvent)
		ev := intake.Event{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, MessageID: m.ID, Provider: "stripe",
			Type: "stripe.x", Kind: intake.KindEvent, ProviderEventID: eventID, OccurredAt: c.Now(), ReceivedAt: c.Now(),
			Data: json.RawMessage(body), State: intake.EventPending, MaxAttempts: 6, NextAttemptAt: c.Now(), CreatedAt: c.Now()}
		out, err := s.SettleMessage(ctx, c.Now(), intake.Settlement{MessageID: m.ID, Attempt: 1, To: intake.MessageProcessed,
			Outcome: intake.OutcomeEvents, ProviderEventID: eventID, Identity: &id, Events: []intake.Event{ev}})
		if err != nil {
			t.Fatal(err)
		}
		// Route it: no consumer, so routing is finished.
		for _, ev := range out.Events {
			testkit.Route(t, s, c.Now(), ev.ID, intake.EventNoConsumer)
		}
		return out
	}
	first := process("evt_1")
	sw := sweeper.New(sweeper.Config{Store: s, Clock: c, Batch: 2})

	c.Advance(6 * 24 * time.Hour)
	if b, m, err := sw.RunOnce(ctx); err != nil || b != 0 || m != 0 {
		t.Fatalf("day 6: dropped %d bodies, %d messages, %v", b, m, err)
	}
	c.Advance(2 * 24 * time.Hour)
	if b, m, err := sw.RunOnce(ctx); err != nil || b != 1 || m != 0 {
		t.Fatalf("day 8: dropped %d bodies, %d messages, %v", b, m, err)
	}
	page, _ := s.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{})
	if len(page.Items) != 1 {
		t.Fatalf("%d messages", len(page.Items))
	}
	if _, err := s.MessageBody(ctx, intake.Scope{}, page.Items[0].ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("body still served: %v", err)
	}
	// The provider re-sends the same event after the body was dropped: still a duplicate.
	if again := process("evt_1"); again.Outcome != intake.OutcomeDuplicate || first.State != intake.MessageProcessed {
		t.Fatalf("re-sent after body drop: %+v", again)
	}
	c.Advance(31 * 24 * time.Hour)
	b, m, err := sw.RunOnce(ctx)
	if err != nil || m != 2 || b != 1 {
		t.Fatalf("day 39: dropped %d bodies, %d messages, %v", b, m, err)
	}
	if n, _ := s.CountMessages(ctx, intake.Scope{}, intake.MessageFilter{}); n != 0 {
		t.Fatalf("%d messages left", n)
	}
	if p, _ := s.ListEvents(ctx, intake.Scope{}, intake.EventFilter{}); len(p.Items) != 0 {
		t.Fatalf("%d events left", len(p.Items))
	}
}
