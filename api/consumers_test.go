package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
)

func newConsumer(name string, types ...string) api.CreateConsumerRequest {
	return api.CreateConsumerRequest{Name: name, App: "billing", URL: "http://127.0.0.1:9/hooks/" + name, EventTypes: types}
}

func TestConsumerSigningSecretIsShownOnceAndStoredOnlySealed(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	created := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, api.CreateConsumerRequest{
		Name: "invoices", App: "billing", URL: "http://127.0.0.1:8080/hooks",
		EventTypes: []string{"stripe.invoice.*", "github.push"}, Completion: true,
	})
	secret := created.SigningSecret
	if !strings.HasPrefix(secret, "whsec_") || len(secret) < len("whsec_")+40 {
		t.Fatalf("signing secret %q: want whsec_ and 32 random bytes", secret)
	}
	if !intake.ValidID(created.ID) || created.OrgID != acme.org.ID || created.Name != "invoices" || created.App != "billing" ||
		created.URL != "http://127.0.0.1:8080/hooks" || strings.Join(created.EventTypes, " ") != "stripe.invoice.* github.push" ||
		!created.Completion || !created.Enabled || !created.CreatedAt.Equal(t0) {
		t.Fatalf("created consumer: %+v", created)
	}

	var answers []string
	for _, tok := range []string{staffToken, acme.org.APIKey} {
		answers = append(answers,
			e.do("GET", "/api/v1/consumers", tok, nil).Body.String(),
			e.do("GET", "/api/v1/consumers/"+created.ID, tok, nil).Body.String(),
			e.do("PATCH", "/api/v1/consumers/"+created.ID, tok, `{"enabled":true}`).Body.String())
	}
	key := strings.TrimPrefix(secret, "whsec_")
	for _, a := range answers {
		if !strings.Contains(a, created.ID) || strings.Contains(a, key) || strings.Contains(a, "signing_secret") {
			t.Fatalf("an answer after the first shows the secret (or not the consumer): %s", a)
		}
	}
	if strings.Contains(string(e.dbBytes()), key) {
		t.Fatal("the signing secret is stored in plaintext")
	}

	// What is stored opens to the secret, bound to this consumer's id.
	stored, err := e.store.Consumer(context.Background(), intake.Scope{}, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if opened, err := e.sealer.Open(stored.SealedSecret, []byte(created.ID)); err != nil || string(opened) != secret {
		t.Fatalf("stored secret opens to %q, %v", opened, err)
	}
	if _, err := e.sealer.Open(stored.SealedSecret, []byte(intake.NewID())); err == nil {
		t.Fatal("the sealed secret opens under another consumer's id")
	}
}

func TestEachConsumerGetsItsOwnSecret(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	a := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("a", "*"))
	b := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("b", "*"))
	if a.SigningSecret == b.SigningSecret || a.ID == b.ID {
		t.Fatalf("two consumers share a secret or id: %+v %+v", a, b)
	}
}

func TestConsumerRequestsWithBadPatternsOrURLsAre400WithAClearMessage(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	ok := newConsumer("x", "stripe.invoice.paid")
	with := func(f func(*api.CreateConsumerRequest)) api.CreateConsumerRequest {
		r := ok
		r.EventTypes = append([]string(nil), ok.EventTypes...)
		f(&r)
		return r
	}
	cases := []struct {
		body any
		want string
	}{
		{with(func(r *api.CreateConsumerRequest) { r.Name = "" }), "name is required"},
		{with(func(r *api.CreateConsumerRequest) { r.App = " " }), "app is required"},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "" }), "url is required"},
		{with(func(r *api.CreateConsumerRequest) { r.EventTypes = nil }), "event_types needs at least one pattern"},
		{with(func(r *api.CreateConsumerRequest) { r.EventTypes = []string{} }), "event_types needs at least one pattern"},
		{with(func(r *api.CreateConsumerRequest) { r.EventTypes = []string{"stripe.*.paid"} }), `event_types[0]: event type pattern "stripe.*.paid": * may only end a pattern, after a dot`},
		{with(func(r *api.CreateConsumerRequest) { r.EventTypes = []string{"github.push", "stripe*"} }), `event_types[1]: event type pattern "stripe*"`},
		{with(func(r *api.CreateConsumerRequest) { r.EventTypes = []string{"stripe invoice"} }), "is empty or has spaces"},
		{with(func(r *api.CreateConsumerRequest) { r.EventTypes = []string{""} }), "is empty or has spaces"},
		{with(func(r *api.CreateConsumerRequest) { r.EventTypes = []string{strings.Repeat("a", 201)} }), "event_types[0] is longer than 200 bytes"},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "ftp://127.0.0.1/x" }), `url scheme "ftp" is not one intake delivers to`},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "/hooks" }), "url must be an absolute URL"},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "http://user:pw@127.0.0.1/" }), "url must not carry credentials"},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "http://169.254.169.254/latest/meta-data/" }), "address 169.254.169.254 is refused by the consumer address policy"},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "http://[fd00:ec2::254]/" }), "address fd00:ec2::254 is refused"},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "http://billing.invalid/hooks" }), `url host "billing.invalid" does not resolve`},
		{with(func(r *api.CreateConsumerRequest) { r.URL = "http://127.0.0.1/" + strings.Repeat("a", 2048) }), "url must be at most 2048 bytes"},
		{`{"name":"x","app":"a","url":"http://127.0.0.1/","event_types":"*"}`, "event_types must be an array"},
		{`{"name":"x","app":"a","url":"http://127.0.0.1/","event_types":["*"],"secret":"mine"}`, `unknown field "secret"`},
	}
	for _, c := range cases {
		wantError(t, e.do("POST", "/api/v1/consumers", acme.org.APIKey, c.body), 400, intake.EINVALID, c.want)
	}
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, ok)
	for body, want := range map[string]string{
		`{}`:                "at least one setting",
		`{"enabled":"yes"}`: "enabled must be true or false",
		`{"url":"x"}`:       "url must be an absolute",
		`{"bogus":1}`:       `unknown field "bogus"`,
	} {
		wantError(t, e.do("PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, body), 400, intake.EINVALID, want)
	}
	wantError(t, e.do("GET", "/api/v1/consumers/nope", acme.org.APIKey, nil), 400, intake.EINVALID, "malformed id")
	if got := must[api.List[api.Consumer]](e, 200, "GET", "/api/v1/consumers", staffToken, nil).Items; len(got) != 1 {
		t.Fatalf("refused requests stored consumers: %+v", got)
	}
}

func TestZeroConsumerPolicyRefusesNoAddress(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	e.h = validating(t, api.New(api.Config{Control: control.New(control.Config{Store: e.store, Sealer: e.sealer, StaffToken: staffToken,
		PublicURL: publicURL, Logger: logger}), Wakes: e.store, PublicURL: publicURL, Logger: logger}).Handler())
	req := newConsumer("metadata", "*")
	req.URL = "http://169.254.169.254/"
	must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, req)
}

func TestOrgKeySeesAndChangesOnlyItsOwnConsumers(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	mine := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("mine", "*"))
	theirs := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", globex.org.APIKey, newConsumer("theirs", "*"))
	if mine.OrgID != acme.org.ID || theirs.OrgID != globex.org.ID {
		t.Fatalf("consumers made in the wrong orgs: %+v %+v", mine, theirs)
	}
	key := acme.org.APIKey

	if got := must[api.List[api.Consumer]](e, 200, "GET", "/api/v1/consumers", key, nil).Items; len(got) != 1 || got[0].ID != mine.ID {
		t.Fatalf("consumers seen by acme's key: %+v", got)
	}
	wantError(t, e.do("GET", "/api/v1/consumers/"+theirs.ID, key, nil), 404, intake.ENOTFOUND, "not found")
	wantError(t, e.do("PATCH", "/api/v1/consumers/"+theirs.ID, key, `{"enabled":false}`), 404, intake.ENOTFOUND, "not found")
	if got := must[api.Consumer](e, 200, "GET", "/api/v1/consumers/"+theirs.ID, staffToken, nil); !got.Enabled {
		t.Fatal("acme's key disabled globex's consumer")
	}

	sneaky := newConsumer("sneaky", "*")
	sneaky.OrgID = globex.org.ID
	wantError(t, e.do("POST", "/api/v1/consumers", key, sneaky), 403, intake.EFORBIDDEN, "own org")
	wantError(t, e.do("POST", "/api/v1/consumers", staffToken, newConsumer("orphan", "*")), 400, intake.EINVALID, "org_id is required")
	nowhere := newConsumer("nowhere", "*")
	nowhere.OrgID = intake.NewID()
	wantError(t, e.do("POST", "/api/v1/consumers", staffToken, nowhere), 404, intake.ENOTFOUND, "not found")

	if got := must[api.List[api.Consumer]](e, 200, "GET", "/api/v1/consumers", staffToken, nil).Items; len(got) != 2 {
		t.Fatalf("staff sees %d consumers, want 2", len(got))
	}
}

func TestDisabledConsumerStaysListedAndCanBeEnabledAgain(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("c", "github.*"))
	path := "/api/v1/consumers/" + c.ID
	if got := must[api.Consumer](e, 200, "PATCH", path, acme.org.APIKey, `{"enabled":false}`); got.Enabled || got.ID != c.ID || got.Name != "c" {
		t.Fatalf("after disable: %+v", got)
	}
	if got := must[api.Consumer](e, 200, "GET", path, acme.org.APIKey, nil); got.Enabled {
		t.Fatalf("disable did not stick: %+v", got)
	}
	if got := must[api.List[api.Consumer]](e, 200, "GET", "/api/v1/consumers", acme.org.APIKey, nil).Items; len(got) != 1 || got[0].Enabled {
		t.Fatalf("list after disable: %+v", got)
	}
	if got := must[api.Consumer](e, 200, "PATCH", path, acme.org.APIKey, `{"enabled":true}`); !got.Enabled {
		t.Fatalf("after enable: %+v", got)
	}
}

func TestRotatingAConsumerSecretShowsTheNewOneOnceAndBoundsTheOverlap(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, api.CreateConsumerRequest{Name: "b", App: "b",
		URL: "http://127.0.0.1:9/", EventTypes: []string{"*"}})
	r := must[api.RotatedSecret](e, 201, "POST", "/api/v1/consumers/"+c.ID+"/rotate-secret", acme.org.APIKey, api.RotateSecretRequest{KeepOldFor: "1h"})
	if !strings.HasPrefix(r.SigningSecret, "whsec_") || r.SigningSecret == c.SigningSecret || r.OldValidUntil == nil ||
		r.OldValidUntil.Sub(e.clock.Now()).Round(time.Second) != time.Hour {
		t.Fatalf("rotation = %+v", r)
	}
	if got := e.do("GET", "/api/v1/consumers/"+c.ID, acme.org.APIKey, nil).Body.String(); strings.Contains(got, r.SigningSecret) {
		t.Fatal("the consumer shows its new secret")
	}
	for _, keep := range []string{"-1h", "999h", "soon"} {
		wantError(t, e.do("POST", "/api/v1/consumers/"+c.ID+"/rotate-secret", acme.org.APIKey, api.RotateSecretRequest{KeepOldFor: keep}),
			400, intake.EINVALID, "keep_old_for")
	}
	r = must[api.RotatedSecret](e, 201, "POST", "/api/v1/consumers/"+c.ID+"/rotate-secret", acme.org.APIKey, api.RotateSecretRequest{KeepOldFor: "0s"})
	if r.OldValidUntil != nil {
		t.Fatalf("keep_old_for 0s still keeps the old secret until %v", r.OldValidUntil)
	}
}

func TestConsumerURLEventTypesAndNameChangeOverTheVersionRead(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("orders", "stripe.*"))
	patch := func(etag, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("PATCH", "/api/v1/consumers/"+c.ID, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+acme.org.APIKey)
		req.Header.Set("If-Match", etag)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	etag := e.do("GET", "/api/v1/consumers/"+c.ID, acme.org.APIKey, nil).Header().Get("ETag")
	rec := patch(etag, `{"name": "invoices", "url": "http://127.0.0.1:9/invoices", "event_types": ["stripe.invoice.*", "github.push"]}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH name, url, event_types: %d %s", rec.Code, rec.Body)
	}
	stored, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Name != "invoices" || stored.URL != "http://127.0.0.1:9/invoices" || strings.Join(stored.EventTypes, " ") != "stripe.invoice.* github.push" {
		t.Fatalf("stored after PATCH: %+v", stored)
	}
	// Over the version read before that change, nothing changes.
	wantError(t, patch(etag, `{"url": "http://127.0.0.1:9/stale"}`), http.StatusPreconditionFailed, intake.EVERSION, "changed since")
	wantError(t, patch(rec.Header().Get("ETag"), `{"url": "http://169.254.169.254/"}`), http.StatusBadRequest, intake.EINVALID, "consumer address policy")
	wantError(t, patch(rec.Header().Get("ETag"), `{"event_types": []}`), http.StatusBadRequest, intake.EINVALID, "event_types needs at least one pattern")
	wantError(t, patch(rec.Header().Get("ETag"), `{"name": ""}`), http.StatusBadRequest, intake.EINVALID, "name is required")
	if got := must[api.Consumer](e, 200, "GET", "/api/v1/consumers/"+c.ID, acme.org.APIKey, nil); got.URL != stored.URL || got.Name != "invoices" ||
		len(got.EventTypes) != 2 {
		t.Fatalf("a refused change saved something: %+v", got)
	}
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	var details []string
	for _, a := range audit.Items {
		if a.TargetID == c.ID && a.Action == "consumer.update" {
			details = append(details, a.Detail)
		}
	}
	if len(details) != 1 || details[0] != "name=invoices url=http://127.0.0.1:9/invoices event_types=stripe.invoice.*,github.push" {
		t.Fatalf("consumer.update audit: %q", details)
	}
}
