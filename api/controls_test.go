package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestConsumerControlsAreSavedShownAndAudited(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("orders", "*"))
	if c.Paused || c.RatePerSec != 0 || c.MaxInFlight != nil || c.RetryAttempts != intake.DefaultMaxAttempts ||
		c.BreakerFailures != intake.DefaultBreakerFailures || c.AutoDisableAfter != "72h0m0s" {
		t.Fatalf("a new consumer's controls: %+v", c)
	}
	got := must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey,
		`{"rate_per_sec": 50, "max_in_flight": 5, "ordering": "subject", "retry": {"attempts": 10, "base": "30s"},
		  "breaker_failures": 20, "auto_disable_after": "24h"}`)
	if got.RatePerSec != 50 || got.MaxInFlight == nil || *got.MaxInFlight != 5 || got.Ordering != "subject" ||
		got.RetryAttempts != 10 || got.RetryBase != "30s" || got.BreakerFailures != 20 || got.AutoDisableAfter != "24h0m0s" {
		t.Fatalf("after PATCH: %+v", got)
	}
	stored, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Controls.MaxInFlight != 5 || stored.Controls.RatePerSec != 50 || stored.Controls.Retry.Base.String() != "30s" {
		t.Fatalf("stored controls: %+v", stored.Controls)
	}
	// A change of something else leaves the controls as they are; null
	// removes max_in_flight.
	got = must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, `{"name": "orders-2"}`)
	if got.MaxInFlight == nil || got.RatePerSec != 50 {
		t.Fatalf("an unrelated PATCH changed the controls: %+v", got)
	}
	got = must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, `{"max_in_flight": null}`)
	if got.MaxInFlight != nil || got.RatePerSec != 50 {
		t.Fatalf("max_in_flight null: %+v", got)
	}

	paused := must[api.Consumer](e, 200, "POST", "/api/v1/consumers/"+c.ID+"/pause", acme.org.APIKey, nil)
	if !paused.Paused {
		t.Fatal("pause did not pause")
	}
	h := must[api.ConsumerHealth](e, 200, "GET", "/api/v1/consumers/"+c.ID+"/health", acme.org.APIKey, nil)
	if h.State != intake.ConsumerPaused {
		t.Fatalf("health of a paused consumer: %+v", h)
	}
	if resumed := must[api.Consumer](e, 200, "POST", "/api/v1/consumers/"+c.ID+"/resume", acme.org.APIKey, nil); resumed.Paused {
		t.Fatal("resume did not resume")
	}
	h = must[api.ConsumerHealth](e, 200, "GET", "/api/v1/consumers/"+c.ID+"/health", acme.org.APIKey, nil)
	if h.State != intake.ConsumerEnabled || h.Delivered1h != 0 || h.LastDeliveryAt != nil {
		t.Fatalf("health of a fresh consumer: %+v", h)
	}

	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	var actions []string
	for _, a := range audit.Items {
		if a.TargetID == c.ID {
			actions = append(actions, a.Action+" "+a.Detail)
		}
	}
	all := strings.Join(actions, "\n")
	for _, want := range []string{"consumer.pause", "consumer.resume", "rate_per_sec=50", "max_in_flight=5", "max_in_flight=0",
		"retry.attempts=10", "retry.base=30s", "breaker_failures=20", "auto_disable_after=24h"} {
		if !strings.Contains(all, want) {
			t.Errorf("audit lacks %q:\n%s", want, all)
		}
	}
}

func TestBadConsumerControlsAreRefusedAndNothingIsSaved(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("orders", "*"))
	before, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"rate_per_sec": -1}`, "rate_per_sec"},
		{`{"rate_per_sec": 1e9}`, "rate_per_sec"},
		{`{"max_in_flight": 10001}`, "max_in_flight must be between 1"},
		{`{"max_in_flight": -4}`, "max_in_flight"},
		{`{"ordering": "event.data.("}`, "ordering"},
		{`{"ordering": "1 + 1"}`, "string"},
		{`{"retry": {"attempts": 500}}`, "retry.attempts"},
		{`{"retry": {"base": "soon"}}`, "retry.base"},
		{`{"auto_disable_after": "5m"}`, "auto_disable_after"},
		{`{"breaker_failures": -1}`, "breaker_failures"},
		// One bad control refuses the whole change.
		{`{"rate_per_sec": 10, "max_in_flight": -1}`, "max_in_flight"},
		{`{"paused": true, "retry": {"attempts": -1}}`, "retry.attempts"},
	} {
		rec := e.do("PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, tc.body)
		if rec.Code != http.StatusBadRequest || !strings.Contains(strings.ToLower(rec.Body.String()), strings.ToLower(tc.want)) {
			t.Errorf("%s: %d %s, want 400 mentioning %q", tc.body, rec.Code, rec.Body, tc.want)
		}
	}
	after, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Controls != before.Controls || after.Name != before.Name {
		t.Fatalf("a refused change saved something: %+v → %+v", before.Controls, after.Controls)
	}
}

func TestConsumerListsAndReadsSayEachConsumersState(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	on := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("on", "*"))
	held := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("held", "*"))
	off := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("off", "*"))
	if on.State != intake.ConsumerEnabled {
		t.Fatalf("a new consumer's state is %q, want enabled", on.State)
	}
	if p := must[api.Consumer](e, 200, "POST", "/api/v1/consumers/"+held.ID+"/pause", acme.org.APIKey, nil); p.State != intake.ConsumerPaused {
		t.Fatalf("pause answered state %q", p.State)
	}
	if d := must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+off.ID, acme.org.APIKey, `{"enabled": false}`); d.State != intake.ConsumerDisabled {
		t.Fatalf("disable answered state %q", d.State)
	}
	list := must[api.List[api.Consumer]](e, 200, "GET", "/api/v1/consumers", acme.org.APIKey, nil)
	got := map[string]string{}
	for _, c := range list.Items {
		got[c.Name] = c.State
	}
	if got["on"] != intake.ConsumerEnabled || got["held"] != intake.ConsumerPaused || got["off"] != intake.ConsumerDisabled {
		t.Fatalf("listed states %v", got)
	}
	if c := must[api.Consumer](e, 200, "GET", "/api/v1/consumers/"+held.ID, acme.org.APIKey, nil); c.State != intake.ConsumerPaused {
		t.Fatalf("read state %q, want paused", c.State)
	}
}

func TestConsumerCreateTakesEveryControlAnUpdateTakes(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	got := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey,
		`{"name": "orders", "app": "billing", "url": "http://127.0.0.1:9/hooks", "event_types": ["*"], "enabled": false,
		  "paused": true, "rate_per_sec": 50, "max_in_flight": 5, "ordering": "event.data.id", "retry": {"attempts": 10, "base": "30s"},
		  "breaker_failures": 20, "auto_disable_after": "24h", "filter": "event.type != \"x\""}`)
	if got.Enabled || !got.Paused || got.RatePerSec != 50 || got.MaxInFlight == nil || *got.MaxInFlight != 5 ||
		got.Ordering != "event.data.id" || got.RetryAttempts != 10 || got.RetryBase != "30s" || got.BreakerFailures != 20 ||
		got.AutoDisableAfter != "24h0m0s" || got.Filter == "" || !strings.HasPrefix(got.SigningSecret, "whsec_") {
		t.Fatalf("created with controls: %+v", got)
	}
	stored, err := e.store.Consumer(context.Background(), intake.Scope{}, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := intake.Controls{Paused: true, RatePerSec: 50, MaxInFlight: 5, Ordering: "event.data.id",
		Retry: intake.RetryPolicy{Attempts: 10, Base: 30 * time.Second}, BreakerFailures: 20, AutoDisableAfter: 24 * time.Hour}
	if stored.Controls != want || stored.Enabled {
		t.Fatalf("stored: enabled %v, controls %+v; want %+v", stored.Enabled, stored.Controls, want)
	}
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	var create string
	for _, a := range audit.Items {
		if a.TargetID == got.ID && a.Action == "consumer.create" {
			create = a.Detail
		}
	}
	for _, w := range []string{"paused=true", "rate_per_sec=50", "max_in_flight=5", "retry.attempts=10", "enabled=false", `ordering: "" → "event.data.id"`} {
		if !strings.Contains(create, w) {
			t.Errorf("consumer.create audit %q lacks %q", create, w)
		}
	}
}

// A control refused on creation is refused with the very message an
// update of it gets, and creates nothing.
func TestConsumerCreateRefusesABadControlAsAnUpdateDoes(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("orders", "*"))
	for _, bad := range []string{`"rate_per_sec": -1`, `"max_in_flight": -4`, `"max_in_flight": 10001`, `"ordering": "event.data.("`,
		`"ordering": "1 + 1"`, `"retry": {"attempts": 500}`, `"retry": {"base": "soon"}`, `"retry": {"base": "1us"}`,
		`"auto_disable_after": "5m"`, `"breaker_failures": -1`} {
		update := e.do("PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, "{"+bad+"}")
		create := e.do("POST", "/api/v1/consumers", acme.org.APIKey,
			`{"name": "second", "app": "billing", "url": "http://127.0.0.1:9/hooks", "event_types": ["*"], `+bad+`}`)
		if update.Code != http.StatusBadRequest || create.Code != http.StatusBadRequest || create.Body.String() != update.Body.String() {
			t.Errorf("%s: create %d %s; update %d %s; want the same 400", bad, create.Code, create.Body, update.Code, update.Body)
		}
	}
	if list := must[api.List[api.Consumer]](e, 200, "GET", "/api/v1/consumers", acme.org.APIKey, nil); len(list.Items) != 1 {
		t.Fatalf("a refused create saved a consumer: %+v", list.Items)
	}
}
