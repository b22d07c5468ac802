package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The scope cases: every read (and every operator write) that takes a
// Scope finds nothing of another org's rows. Each read is first made in
// the owning org's scope, so a case cannot pass because the row was never
// there.

// orgAWithEveryRow is an org with a row of every kind an org owns.
type orgAWithEveryRow struct {
	fixture
	consumer  intake.Consumer
	delivered intake.Event // dead after its one call failed: it has a delivery
	pending   intake.Event // not yet fanned out
	handledID string       // the message of delivered
	queued    *intake.Message
	key       intake.APIKey
	job       intake.ReplayJob
	auditID   string
}

func newOrgAWithEveryRow(t *testing.T, s intake.Store) orgAWithEveryRow {
	t.Helper()
	ctx := context.Background()
	a := orgAWithEveryRow{fixture: newFixture(t, s, "a")}
	sa := intake.Scope{OrgID: a.org.ID}
	a.auditID = intake.NewID()
	a.consumer = intake.Consumer{ID: intake.NewID(), OrgID: a.org.ID, Name: "billing", App: "billing", URL: "http://127.0.0.1:9/billing",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("sealed"), CreatedAt: t0,
		Controls: intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}}}
	if err := s.CreateConsumer(ctx, a.consumer, intake.AuditEntry{ID: a.auditID, OrgID: a.org.ID, Actor: "key:ik_test",
		Action: "consumer.create", TargetType: "consumer", TargetID: a.consumer.ID, At: t0}); err != nil {
		t.Fatal(err)
	}
	a.consumer.Version = 1

	a.delivered = a.eventAt(t, s, t0)
	calls := fanOut(t, s, a.delivered, t0, time.Minute, to(a.consumer))
	if len(calls) != 1 {
		t.Fatalf("fan-out handed over %d calls, want 1", len(calls))
	}
	settleRoute(t, s, t0, calls[0], intake.DeliveryRetry) // its one attempt: the event is dead
	a.pending = a.eventAt(t, s, t0)
	a.handledID = a.delivered.MessageID
	a.queued = a.ingest(t, s, `{"queued":true}`, t0.Add(-30*time.Minute)) // due before any of org b's

	a.key = intake.APIKey{ID: intake.NewID(), OrgID: a.org.ID, Prefix: "ik_second", Hash: []byte("second-" + a.org.ID), CreatedAt: t0}
	if err := s.CreateAPIKey(ctx, sa, a.key); err != nil {
		t.Fatal(err)
	}
	if err := s.PutNotificationSettings(ctx, sa, intake.NotificationSettings{OrgID: a.org.ID, URL: "https://ops.example/a",
		Topics: []string{intake.NoticeEventDead}, SealedSecret: []byte{1}, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	a.job = intake.ReplayJob{ID: intake.NewID(), OrgID: a.org.ID, EndpointID: a.ep.ID, Since: t0.Add(-time.Hour), Until: t0,
		Total: 1, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateReplayJob(ctx, a.job); err != nil {
		t.Fatal(err)
	}
	return a
}

// wantNoneOrNotFound passes when a read of a list found nothing, either
// as an empty list or as not found.
func wantNoneOrNotFound(t *testing.T, what string, n int, err error) {
	t.Helper()
	if err != nil && intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("%s: %v", what, err)
	}
	if n != 0 {
		t.Fatalf("%s: org b sees %d of org a's rows", what, n)
	}
}

func testEveryScopedReadHidesAnotherOrgsRows(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a := newOrgAWithEveryRow(t, s)
	b := newFixture(t, s, "b")
	bConsumer := b.consumer(t, s, "own", intake.Controls{})
	b.ingest(t, s, `{"b":true}`, t0)
	sa, sb := intake.Scope{OrgID: a.org.ID}, intake.Scope{OrgID: b.org.ID}

	// One read of a row: found in org a's scope, not found in org b's.
	one := func(what string, read func(intake.Scope) error) {
		t.Helper()
		if err := read(sa); err != nil {
			t.Fatalf("%s in its own org: %v", what, err)
		}
		if err := read(sb); intake.ErrorCode(err) != intake.ENOTFOUND {
			t.Fatalf("%s in another org: error = %v, want %s", what, err, intake.ENOTFOUND)
		}
	}
	one("Event", func(sc intake.Scope) error { _, err := s.Event(ctx, sc, a.delivered.ID); return err })
	one("Message", func(sc intake.Scope) error { _, err := s.Message(ctx, sc, a.handledID); return err })
	one("MessageBody", func(sc intake.Scope) error { _, err := s.MessageBody(ctx, sc, a.queued.ID); return err })
	one("Consumer", func(sc intake.Scope) error { _, err := s.Consumer(ctx, sc, a.consumer.ID); return err })
	one("Endpoint", func(sc intake.Scope) error { _, err := s.Endpoint(ctx, sc, a.ep.ID); return err })
	one("Connection", func(sc intake.Scope) error { _, err := s.Connection(ctx, sc, a.conn.ID); return err })
	one("ConsumerHealth", func(sc intake.Scope) error { _, err := s.ConsumerHealth(ctx, sc, a.consumer.ID, t0); return err })
	one("NotificationSettings", func(sc intake.Scope) error { _, err := s.NotificationSettings(ctx, sc, a.org.ID); return err })
	one("ReplayJob", func(sc intake.Scope) error { _, err := s.ReplayJob(ctx, sc, a.job.ID); return err })

	// The reads of an org's row's parts: some in org a's scope, none in org b's.
	parts := func(what string, read func(intake.Scope) (int, error)) {
		t.Helper()
		if n, err := read(sa); err != nil || n == 0 {
			t.Fatalf("%s in its own org: %d, %v", what, n, err)
		}
		n, err := read(sb)
		wantNoneOrNotFound(t, what, n, err)
	}
	parts("Deliveries", func(sc intake.Scope) (int, error) {
		l, err := s.Deliveries(ctx, sc, a.delivered.ID)
		return len(l), err
	})
	parts("ConsumerDeliveries", func(sc intake.Scope) (int, error) {
		l, err := s.ConsumerDeliveries(ctx, sc, a.consumer.ID, 10)
		return len(l), err
	})
	parts("ConsumerStats", func(sc intake.Scope) (int, error) {
		bs, err := s.ConsumerStats(ctx, sc, a.consumer.ID, intake.StatsDay, t0)
		n := 0
		for _, b := range bs {
			n += b.Delivered + b.Failed
		}
		return n, err
	})
	parts("MessageAttempts", func(sc intake.Scope) (int, error) {
		l, err := s.MessageAttempts(ctx, sc, a.handledID)
		return len(l), err
	})
	parts("ListEvents of org a's consumer", func(sc intake.Scope) (int, error) {
		p, err := s.ListEvents(ctx, sc, intake.EventFilter{ConsumerID: a.consumer.ID})
		return len(p.Items), err
	})
	parts("ListMessages of org a's endpoint", func(sc intake.Scope) (int, error) {
		p, err := s.ListMessages(ctx, sc, intake.MessageFilter{EndpointID: a.ep.ID})
		return len(p.Items), err
	})
	parts("ListMessages of org a's provider event", func(sc intake.Scope) (int, error) {
		p, err := s.ListMessages(ctx, sc, intake.MessageFilter{ProviderEventID: a.delivered.ProviderEventID})
		return len(p.Items), err
	})
	parts("CountMessages of org a's endpoint", func(sc intake.Scope) (int, error) {
		return s.CountMessages(ctx, sc, intake.MessageFilter{EndpointID: a.ep.ID})
	})
	parts("CountEvents of org a's consumer", func(sc intake.Scope) (int, error) {
		return s.CountEvents(ctx, sc, intake.EventFilter{ConsumerID: a.consumer.ID})
	})
	parts("CountEvents searched", func(sc intake.Scope) (int, error) {
		m, err := intake.ParseMatch(string(a.delivered.Data))
		if err != nil {
			return 0, err
		}
		return s.CountEvents(ctx, sc, intake.EventFilter{Search: intake.Search{Match: m}})
	})

	// The lists in org b's scope hold org b's rows and none of org a's.
	ofA := func(what string, orgIDs []string, wantOwn int) {
		t.Helper()
		own := 0
		for _, id := range orgIDs {
			switch id {
			case a.org.ID:
				t.Fatalf("%s in org b's scope lists a row of org a", what)
			case b.org.ID:
				own++
			default:
				t.Fatalf("%s in org b's scope lists a row of org %q", what, id)
			}
		}
		if own < wantOwn {
			t.Fatalf("%s in org b's scope lists %d of its own rows, want %d", what, own, wantOwn)
		}
	}
	events, err := s.ListEvents(ctx, sb, intake.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var orgs []string
	for _, e := range events.Items {
		orgs = append(orgs, e.OrgID)
	}
	ofA("ListEvents", orgs, 0)
	for _, st := range []intake.EventState{intake.EventDead, intake.EventPending} {
		p, err := s.ListEvents(ctx, sb, intake.EventFilter{State: st, Type: a.delivered.Type})
		wantNoneOrNotFound(t, "ListEvents by "+string(st), len(p.Items), err)
	}

	messages, err := s.ListMessages(ctx, sb, intake.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	orgs = nil
	for _, m := range messages.Items {
		orgs = append(orgs, m.OrgID)
	}
	ofA("ListMessages", orgs, 1)
	if n, err := s.CountMessages(ctx, sb, intake.MessageFilter{}); err != nil || n != 1 {
		t.Fatalf("CountMessages in org b's scope = %d, %v; want its own 1", n, err)
	}

	consumers, err := s.ListConsumers(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	orgs = nil
	for _, c := range consumers {
		orgs = append(orgs, c.OrgID)
	}
	ofA("ListConsumers", orgs, 1)

	endpoints, err := s.ListEndpoints(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	orgs = nil
	for _, e := range endpoints {
		orgs = append(orgs, e.OrgID)
	}
	ofA("ListEndpoints", orgs, 1)

	connections, err := s.ListConnections(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	orgs = nil
	for _, c := range connections {
		orgs = append(orgs, c.OrgID)
	}
	ofA("ListConnections", orgs, 1)

	keys, err := s.ListAPIKeys(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	orgs = nil
	for _, k := range keys {
		if k.ID == a.key.ID {
			t.Fatal("ListAPIKeys in org b's scope lists org a's key")
		}
		orgs = append(orgs, k.OrgID)
	}
	ofA("ListAPIKeys", orgs, 1)
	if keys, _ := s.ListAPIKeys(ctx, sa); len(keys) != 2 {
		t.Fatalf("org a lists %d keys, want 2", len(keys))
	}

	list, err := s.ListOrgs(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	orgs = nil
	for _, o := range list {
		orgs = append(orgs, o.ID)
	}
	ofA("ListOrgs", orgs, 1)

	if err := s.RecordAudit(ctx, intake.AuditEntry{ID: intake.NewID(), OrgID: b.org.ID, Actor: "staff", Action: "org.note",
		TargetType: "org", TargetID: b.org.ID, At: t0}); err != nil {
		t.Fatal(err)
	}
	audit, err := s.ListAudit(ctx, sb, intake.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	orgs = nil
	for _, e := range audit.Items {
		if e.ID == a.auditID {
			t.Fatal("ListAudit in org b's scope lists org a's entry")
		}
		orgs = append(orgs, e.OrgID)
	}
	ofA("ListAudit", orgs, 1)
	if audit, _ := s.ListAudit(ctx, sa, intake.AuditFilter{Limit: 100}); len(audit.Items) == 0 {
		t.Fatal("org a lists no audit entries")
	}

	// The overview counts org a's work in its scope and none in org b's.
	q := intake.OverviewQuery{Since: t0.Add(-time.Hour), Hours: 2, Now: t0.Add(time.Hour), QueuedBefore: t0.Add(time.Hour)}
	ov, err := s.Overview(ctx, sa, q)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Live[intake.MessageQueued] != 1 || ov.Events[intake.EventDead] != 1 || ov.Events[intake.EventPending] != 1 ||
		ov.QueuedBefore != 1 || !ov.OldestDueMessage.Equal(a.queued.ReceivedAt) || ov.OldestDueEvent.IsZero() {
		t.Fatalf("org a's overview = %+v", ov)
	}
	ov, err = s.Overview(ctx, sb, q)
	if err != nil {
		t.Fatal(err)
	}
	hours := 0
	for _, h := range ov.Hours {
		for _, n := range h {
			hours += n
		}
	}
	if ov.Live[intake.MessageQueued] != 1 || ov.QueuedBefore != 1 || hours != 1 || len(nonZero(ov.Events)) != 0 ||
		!ov.OldestDueMessage.Equal(t0) || !ov.OldestDueEvent.IsZero() {
		t.Fatalf("org b's overview counts org a's work: %+v", ov)
	}

	// Nor does org b's scope change org a's rows.
	wantCode(t, s.RerouteEvent(ctx, sb, a.delivered.ID, t0), intake.ENOTFOUND)
	if st := eventState(t, s, a.delivered.ID); st != intake.EventDead {
		t.Fatalf("org a's event is %s after org b's re-route, want dead", st)
	}
	wantCode(t, s.RotateConsumerSecret(ctx, sb, a.consumer.ID, []byte("b's"), nil, time.Time{}), intake.ENOTFOUND)
	moved := a.conn
	moved.Name = "taken"
	wantCode(t, s.UpdateConnection(ctx, sb, moved), intake.ENOTFOUND)
	wantCode(t, s.Delete(ctx, sb, intake.DeleteEndpoint, a.ep.ID, t0), intake.ENOTFOUND)
	wantCode(t, s.Delete(ctx, sb, intake.DeleteConnection, a.conn.ID, t0), intake.ENOTFOUND)
	if c, err := s.Consumer(ctx, sa, a.consumer.ID); err != nil || string(c.SealedSecret) != "sealed" {
		t.Fatalf("org a's consumer after org b's rotation = %+v %v", c, err)
	}
	if c, err := s.Connection(ctx, sa, a.conn.ID); err != nil || c.Name != "a" {
		t.Fatalf("org a's connection after org b's update = %+v %v", c, err)
	}
	if e, err := s.Endpoint(ctx, sa, a.ep.ID); err != nil || !e.Enabled {
		t.Fatalf("org a's endpoint after org b's delete = %+v %v", e, err)
	}
	if _, err := s.Consumer(ctx, sb, bConsumer.ID); err != nil {
		t.Fatalf("org b's own consumer: %v", err)
	}
}

// nonZero keeps the counts that are not zero.
func nonZero[K comparable](m map[K]int) map[K]int {
	out := map[K]int{}
	for k, n := range m {
		if n != 0 {
			out[k] = n
		}
	}
	return out
}
