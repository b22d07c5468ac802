package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/router"
)

// An Okta connection may name the header its hook authenticates with; a
// consumer's filter and transform never see it, whether the settle plans
// the fan-out or the router claims the event.
func TestAConsumersRulesNeverSeeTheHeaderItsConnectionNamesAsACredential(t *testing.T) {
	const secret = "okta-shared-value-0123456789"
	for _, planned := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "planned"}[planned], func(t *testing.T) {
			e := setup(t)
			e.conn = intake.Connection{ID: intake.NewID(), OrgID: e.org.ID, Provider: "okta", Name: "okta",
				Config: json.RawMessage(`{"auth_header": "X-Hook-Key"}`), CreatedAt: e.clock.Now()}
			if err := e.store.CreateConnection(context.Background(), e.conn); err != nil {
				t.Fatal(err)
			}
			rec, url := newRecorder(t, 200)
			c, _ := e.consumer(t, "app", url, false, "okta.*")
			e.withRules(t, c, `headers["x-request-id"] == "r-1" && !("x-hook-key" in headers)`,
				`function transform(event, context) { return {body: context.headers} }`)
			e.header = http.Header{"X-Hook-Key": {secret}, "X-Request-Id": {"r-1"}}
			e.planned = planned
			id := e.event(t, "okta.user.session.start")
			e.run(t)
			if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || rec.calls() != 1 {
				t.Fatalf("event %s after %d calls: the filter saw the credential header, or not the others", ev.State, rec.calls())
			}
			rec.mu.Lock()
			body := string(rec.bodies[0])
			rec.mu.Unlock()
			if strings.Contains(body, secret) || !strings.Contains(body, "r-1") {
				t.Fatalf("the transform's context.headers: %s", body)
			}
		})
	}
}

// unreadableConnections is a store whose connections cannot be read while
// broken is set.
type unreadableConnections struct {
	intake.EventQueue
	broken *atomic.Bool
}

func (s unreadableConnections) Connection(ctx context.Context, sc intake.Scope, id string) (intake.Connection, error) {
	if s.broken.Load() {
		return intake.Connection{}, intake.Unavailable(context.DeadlineExceeded)
	}
	return s.EventQueue.Connection(ctx, sc, id)
}

// While the connection cannot be read, the header it names as a credential
// is unknown: the rules that read the request are not run (they would see
// the secret) and nothing is sent, until a later claim reads it.
func TestARuleIsNotRunWhileTheConnectionNamingItsCredentialCannotBeRead(t *testing.T) {
	const secret = "okta-shared-value-0123456789"
	for _, planned := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "planned"}[planned], func(t *testing.T) {
			var broken atomic.Bool
			e := setup(t, func(cfg *router.Config) {
				cfg.Store = unreadableConnections{EventQueue: cfg.Store, broken: &broken}
				cfg.Lease = time.Minute
			})
			e.conn = intake.Connection{ID: intake.NewID(), OrgID: e.org.ID, Provider: "okta", Name: "okta",
				Config: json.RawMessage(`{"auth_header": "X-Hook-Key"}`), CreatedAt: e.clock.Now()}
			if err := e.store.CreateConnection(context.Background(), e.conn); err != nil {
				t.Fatal(err)
			}
			transformed, url := newRecorder(t, 200)
			c, _ := e.consumer(t, "app", url, false, "okta.*")
			e.withRules(t, c, "", `function transform(event, context) { return {body: context.headers} }`)
			filtered, url := newRecorder(t, 200)
			f, _ := e.consumer(t, "audit", url, false, "okta.*")
			e.withRules(t, f, `!("x-hook-key" in headers)`, "")
			e.header = http.Header{"X-Hook-Key": {secret}, "X-Request-Id": {"r-1"}}
			e.planned = planned
			broken.Store(true)
			id := e.event(t, "okta.user.session.start")
			e.run(t)
			ev, ds := e.get(t, id)
			transformed.mu.Lock()
			for _, b := range transformed.bodies {
				if strings.Contains(string(b), secret) {
					t.Errorf("the transform saw the credential header: %s", b)
				}
			}
			transformed.mu.Unlock()
			if ev.State != intake.EventPending || transformed.calls() != 0 || filtered.calls() != 0 || len(ds) != 0 {
				t.Fatalf("%s, %d and %d calls, %+v: rules that could not be judged blind must neither decline nor call",
					ev.State, transformed.calls(), filtered.calls(), ds)
			}

			// Once the lease the fan-out gave up ends and the connection
			// can be read, the event goes out, the header hidden.
			broken.Store(false)
			e.clock.Advance(time.Minute)
			e.run(t)
			if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || transformed.calls() != 1 || filtered.calls() != 1 {
				t.Fatalf("once the connection is read: event %s, %d and %d calls", ev.State, transformed.calls(), filtered.calls())
			}
			transformed.mu.Lock()
			body := string(transformed.bodies[0])
			transformed.mu.Unlock()
			if strings.Contains(body, secret) || !strings.Contains(body, "r-1") {
				t.Fatalf("the transform's context.headers: %s", body)
			}
		})
	}
}

// A retry whose connection cannot be read is not made: its transform,
// which would see the credential header or run without the request, waits
// for a later attempt that can read both.
func TestATransformWaitsWhileTheConnectionNamingItsCredentialCannotBeRead(t *testing.T) {
	const secret = "okta-shared-value-0123456789"
	var broken atomic.Bool
	e := setup(t, func(cfg *router.Config) {
		cfg.Store = unreadableConnections{EventQueue: cfg.Store, broken: &broken}
	})
	e.conn = intake.Connection{ID: intake.NewID(), OrgID: e.org.ID, Provider: "okta", Name: "okta",
		Config: json.RawMessage(`{"auth_header": "X-Hook-Key"}`), CreatedAt: e.clock.Now()}
	if err := e.store.CreateConnection(context.Background(), e.conn); err != nil {
		t.Fatal(err)
	}
	rec, url := newRecorder(t, 500)
	c, _ := e.consumer(t, "app", url, false, "okta.*")
	e.withRules(t, c, "", `function transform(event, context) { return {body: context.headers} }`)
	e.header = http.Header{"X-Hook-Key": {secret}, "X-Request-Id": {"r-1"}}
	id := e.event(t, "okta.user.session.start")
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventRetrying || rec.calls() != 1 {
		t.Fatalf("after the first call: %s, %d calls", ev.State, rec.calls())
	}

	broken.Store(true)
	rec.set(200)
	e.clock.Advance(10 * time.Second)
	e.run(t)
	ev, ds := e.get(t, id)
	if ev.State != intake.EventRetrying || rec.calls() != 1 || len(ds) != 2 ||
		ds[1].Outcome != intake.DeliveryRetry || ds[1].Error != "original request cannot be read" {
		t.Fatalf("while the connection cannot be read: %s, %d calls, %+v", ev.State, rec.calls(), ds)
	}

	broken.Store(false)
	e.clock.Advance(time.Minute)
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || rec.calls() != 2 {
		t.Fatalf("once the connection is read: %s, %d calls", ev.State, rec.calls())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, b := range rec.bodies {
		if strings.Contains(string(b), secret) || !strings.Contains(string(b), "r-1") {
			t.Fatalf("the transform's context.headers: %s", b)
		}
	}
}
