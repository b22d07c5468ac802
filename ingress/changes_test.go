package ingress_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/changes"
)

func TestDisablingAnEndpointTakesEffectOnTheNextRequest(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("enabled: %d", w.Code)
	}
	e.ep.Enabled = false
	if err := e.store.UpdateEndpoint(context.Background(), intake.Scope{}, e.ep); err != nil {
		t.Fatal(err)
	}
	// The clock stands still: the endpoint is still well inside its TTL.
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusNotFound {
		t.Fatalf("right after disabling: %d", w.Code)
	}
	if n := len(e.stored(t)); n != 1 {
		t.Fatalf("%d messages recorded, want only the one before disabling", n)
	}
}

func TestDeletingAnEndpointTakesEffectOnTheNextRequest(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("before deleting: %d", w.Code)
	}
	if err := e.store.Delete(context.Background(), intake.Scope{}, intake.DeleteEndpoint, e.ep.ID, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusNotFound {
		t.Fatalf("right after deleting: %d", w.Code)
	}
	if n := len(e.stored(t)); n != 1 {
		t.Fatalf("%d messages recorded, want only the one before deleting", n)
	}
}

func TestDeletingAnOrgStopsItsEndpointsOnTheNextRequest(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("before deleting: %d", w.Code)
	}
	if err := e.store.Delete(context.Background(), intake.Scope{}, intake.DeleteOrg, e.ep.OrgID, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	// The clock stands still: the endpoint is still well inside its TTL.
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusNotFound {
		t.Fatalf("right after deleting its org: %d", w.Code)
	}
	if n := len(e.stored(t)); n != 1 {
		t.Fatalf("%d messages recorded, want only the one before deleting", n)
	}
}

// heardStore is this process's view of a shared store: its change counter
// moves only when a notification arrives, not when the rows change.
type heardStore struct {
	intake.Store
	heard *changes.Counter
}

func (h heardStore) Changes() intake.Versioned { return h.heard }

func TestAChangeNotificationFlushesTheEndpointCache(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	heard := &changes.Counter{}
	e.h = ingress.New(ingress.Config{Store: heardStore{e.store, heard}, Clock: e.clock})
	e.mux = http.NewServeMux()
	e.mux.Handle("/webhooks/{token}", e.h)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("enabled: %d", w.Code)
	}
	// Another process disables it: the row changes, nothing is heard yet.
	e.ep.Enabled = false
	if err := e.store.UpdateEndpoint(context.Background(), intake.Scope{}, e.ep); err != nil {
		t.Fatal(err)
	}
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("before the notification: %d, want the cached endpoint (the TTL is the fallback)", w.Code)
	}
	heard.Move()
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusNotFound {
		t.Fatalf("after the notification: %d", w.Code)
	}
}
