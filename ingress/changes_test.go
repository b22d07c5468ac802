package ingress_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/changes"
	"github.com/intakehq/intake/internal/token"
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

func TestARotatedTokenWorksForItsOverlapThenAnswersNotFoundEvenWhenCached(t *testing.T) {
	e := setup(t, ingress.Config{EndpointTTL: time.Hour}, nil)
	ctx := context.Background()
	newToken := token.New("")
	rotated, err := e.ep.RotateToken(token.Hash(newToken), nil, e.clock.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.RotateEndpointToken(ctx, intake.Scope{}, rotated); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{e.token, newToken} {
		if w := e.post("/webhooks/"+tok, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
			t.Fatalf("within the overlap: %d", w.Code)
		}
	}
	// The old token's endpoint is cached for an hour; its overlap ends first.
	e.clock.Advance(time.Minute)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusNotFound {
		t.Fatalf("the replaced token after its overlap: %d, want 404", w.Code)
	}
	if w := e.post("/webhooks/"+newToken, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("the new token after the overlap: %d", w.Code)
	}
	if n := len(e.stored(t)); n != 3 {
		t.Fatalf("%d messages recorded, want 3", n)
	}
}
