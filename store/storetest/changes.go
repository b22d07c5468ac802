package storetest

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

// testChanges: every write that disables, deletes, rotates or revokes has
// moved the store's change counter by the time it returns, and the data
// plane's writes do not, so traffic never flushes the caches.
func testChanges(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	org := intake.Scope{OrgID: f.org.ID}
	key := intake.APIKey{ID: intake.NewID(), OrgID: f.org.ID, Prefix: "ik_second", Hash: []byte("second-" + f.org.ID), CreatedAt: t0}
	if err := s.CreateAPIKey(ctx, org, key); err != nil {
		t.Fatal(err)
	}
	consumer := intake.Consumer{ID: intake.NewID(), OrgID: f.org.ID, Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks",
		EventTypes: []string{"stripe.*"}, Enabled: true, SealedSecret: []byte("sealed"), CreatedAt: t0}
	if err := s.CreateConsumer(ctx, consumer); err != nil {
		t.Fatal(err)
	}
	consumer.Version = 1
	other := newFixture(t, s, "other")

	moves := func(what string, write func() error) {
		t.Helper()
		before := s.Changes().Version()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if s.Changes().Version() == before {
			t.Errorf("%s returned without moving the change counter", what)
		}
	}
	created := consumer
	created.ID, created.Name = intake.NewID(), "created"
	moves("creating a consumer", func() error { return s.CreateConsumer(ctx, created) })
	disabled := f.ep
	disabled.Enabled = false
	moves("disabling an endpoint", func() error { return s.UpdateEndpoint(ctx, org, disabled) })
	moves("rotating a connection's secrets", func() error { return s.ReplaceConnectionSecrets(ctx, org, f.conn.ID, []byte{4, 5, 6}) })
	moves("revoking a key", func() error { return s.RevokeAPIKey(ctx, org, key.ID, t0) })
	disabledConsumer := consumer
	disabledConsumer.Enabled = false
	moves("disabling a consumer", func() error { return s.UpdateConsumer(ctx, org, disabledConsumer) })
	changedConn := f.conn
	changedConn.Version++ // moved by the rotation above
	changedConn.Filter = `event.type != "stripe.charge.refunded"`
	moves("changing a connection's filter", func() error { return s.UpdateConnection(ctx, org, changedConn) })
	moves("deleting a consumer", func() error { return s.Delete(ctx, org, intake.DeleteConsumer, consumer.ID, t0) })
	moves("deleting an endpoint", func() error { return s.Delete(ctx, org, intake.DeleteEndpoint, f.ep.ID, t0) })
	moves("deleting a connection", func() error { return s.Delete(ctx, intake.Scope{}, intake.DeleteConnection, other.conn.ID, t0) })
	renamed := other.org
	renamed.Name = "other, renamed"
	moves("renaming an org", func() error { return s.UpdateOrg(ctx, intake.Scope{}, renamed) })
	gone := newFixture(t, s, "gone")
	moves("deleting an org", func() error { return s.Delete(ctx, intake.Scope{}, intake.DeleteOrg, gone.org.ID, t0) })

	before := s.Changes().Version()
	m := other.message(`{}`, t0)
	if err := s.Ingest(ctx, m); err != nil {
		t.Fatal(err)
	}
	c := claimOne(t, s, t0)
	if _, err := s.SettleMessage(ctx, t0, processed(c, nil)); err != nil {
		t.Fatal(err)
	}
	if s.Changes().Version() != before {
		t.Error("ingesting, claiming or settling a message moved the change counter")
	}
}
