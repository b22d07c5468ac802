package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/intakehq/intake"
)

// testUpdatesAreWrittenOverTheVersionRead: a change of a connection, an
// endpoint or a consumer is written only over the version it read, and
// moves it; one made over an older version writes nothing (EVERSION), and
// one of a row that is not there is not found. A secret's rotation moves
// the version too, so a change read before it is refused.
func testUpdatesAreWrittenOverTheVersionRead(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "app", intake.Controls{})
	sc := intake.Scope{OrgID: f.org.ID}

	read, err := s.Consumer(ctx, sc, c.ID)
	if err != nil || read.Version != 1 {
		t.Fatalf("a new consumer: version %d, %v; want 1", read.Version, err)
	}
	first, second := read, read
	first.Name, second.Controls.RatePerSec = "renamed", 5
	if err := s.UpdateConsumer(ctx, sc, first); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.UpdateConsumer(ctx, sc, second), intake.EVERSION)
	now, err := s.Consumer(ctx, sc, c.ID)
	if err != nil || now.Version != 2 || now.Name != "renamed" || now.Controls.RatePerSec != 0 {
		t.Fatalf("after a change and a stale one: %+v %v; want version 2, renamed, the rate untouched", now, err)
	}
	if err := s.RotateConsumerSecret(ctx, sc, c.ID, []byte("new"), nil, t0); err != nil {
		t.Fatal(err)
	}
	now.Enabled = false
	wantCode(t, s.UpdateConsumer(ctx, sc, now), intake.EVERSION)
	gone := now
	gone.ID = intake.NewID()
	wantCode(t, s.UpdateConsumer(ctx, sc, gone), intake.ENOTFOUND)
	other := intake.Scope{OrgID: newFixture(t, s, "beta").org.ID}
	now, _ = s.Consumer(ctx, sc, c.ID)
	wantCode(t, s.UpdateConsumer(ctx, other, now), intake.ENOTFOUND)

	ep, err := s.Endpoint(ctx, sc, f.ep.ID)
	if err != nil || ep.Version != 1 {
		t.Fatalf("a new endpoint: version %d, %v; want 1", ep.Version, err)
	}
	disable, limit := ep, ep
	disable.Enabled, limit.RatePerSec = false, 1
	if err := s.UpdateEndpoint(ctx, sc, disable); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.UpdateEndpoint(ctx, sc, limit), intake.EVERSION)
	if ep, err = s.Endpoint(ctx, sc, f.ep.ID); err != nil || ep.Version != 2 || ep.Enabled || ep.RatePerSec != 500 {
		t.Fatalf("after a disable and a stale limit: %+v %v; want version 2, disabled, the rate untouched", ep, err)
	}

	cn, err := s.Connection(ctx, sc, f.conn.ID)
	if err != nil || cn.Version != 1 {
		t.Fatalf("a new connection: version %d, %v; want 1", cn.Version, err)
	}
	if err := s.ReplaceConnectionSecrets(ctx, sc, cn.ID, []byte{4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	cn.Filter = "true"
	wantCode(t, s.UpdateConnection(ctx, sc, cn), intake.EVERSION)
	if cn, err = s.Connection(ctx, sc, f.conn.ID); err != nil || cn.Version != 2 || cn.Filter != "" {
		t.Fatalf("after a rotation and a stale change: %+v %v; want version 2 and no filter", cn, err)
	}
	if cn.FormerCredentialHeaders != nil {
		t.Fatalf("a new connection's former credential headers: %q, want none", cn.FormerCredentialHeaders)
	}
	cn.Filter = "true"
	cn.FormerCredentialHeaders = []string{"X-Hook-Key", "X-Okta-Key"}
	if err := s.UpdateConnection(ctx, sc, cn); err != nil {
		t.Fatal(err)
	}
	if cn, err = s.Connection(ctx, sc, f.conn.ID); err != nil || cn.Version != 3 || cn.Filter != "true" ||
		!slices.Equal(cn.FormerCredentialHeaders, []string{"X-Hook-Key", "X-Okta-Key"}) {
		t.Fatalf("a change over the version read: %+v %v; want version 3 with its filter and former credential headers", cn, err)
	}
}
