package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/catalog"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/delivery/broker"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/store/sqlite"
)

const (
	staffToken = "staff-token-for-tests"
	publicURL  = "http://intake.test"
	// testProvider is an adapter registered by these tests, so they do not
	// depend on what a real provider's config accepts.
	testProvider = "apitest"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	provider.Register(testAdapter{name: testProvider})
	if _, ok := provider.Lookup("none"); !ok {
		provider.Register(testAdapter{name: "none"})
	}
	code := m.Run()
	if code == 0 {
		code = checkOpenAPICoverage()
	}
	os.Exit(code)
}

// testAdapter accepts any config but one holding "bad".
type testAdapter struct{ name string }

func (a testAdapter) Name() string { return a.name }
func (a testAdapter) ValidateConfig(cfg provider.Config) error {
	if _, bad := cfg["bad"]; bad {
		return errors.New("bad is not a setting")
	}
	return nil
}
func (testAdapter) Verify(*provider.Request, [][]byte, provider.Config) error { return nil }
func (testAdapter) Interpret(*provider.Request, provider.Config) (provider.Interpretation, error) {
	return provider.Interpretation{}, nil
}

// env is an admin API over a real SQLite store in a temporary directory.
type env struct {
	t      *testing.T
	dir    string
	store  *sqlite.Store
	sealer *seal.Sealer
	clock  *testkit.Clock
	logs   *bytes.Buffer
	h      http.Handler
}

func newEnv(t *testing.T) *env {
	return newEnvWith(t, func(s intake.Store) intake.Store { return s })
}

// newEnvWith serves the API over wrap(store), for tests that change what the
// store does.
func newEnvWith(t *testing.T, wrap func(intake.Store) intake.Store) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealer := testkit.Sealer(t)
	e := &env{t: t, dir: dir, store: st, sealer: sealer, clock: testkit.NewClock(t0), logs: &bytes.Buffer{}}
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	e.h = validating(t, api.New(api.Config{
		Control: control.New(control.Config{Store: wrap(st), Sealer: sealer, StaffToken: staffToken, PublicURL: publicURL + "/",
			Clock: e.clock, ConsumerPolicy: delivery.DefaultPolicy(), Brokers: broker.All(), Rules: testkit.Rules(t), Logger: logger}),
		Wakes:      st,
		PublicURL:  publicURL + "/",
		Clock:      e.clock,
		BodyURLKey: []byte("body-url-key"),
		Logger:     logger,
	}).Handler())
	return e
}

// do sends a request with a bearer token ("" for none) and a JSON body (a
// string is sent as is).
func (e *env) do(method, path, tok string, body any) *httptest.ResponseRecorder {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, r)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// must sends a request that must answer status, and decodes the answer.
func must[T any](e *env, status int, method, path, tok string, body any) T {
	e.t.Helper()
	rec := e.do(method, path, tok, body)
	if rec.Code != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, status, rec.Body)
	}
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		e.t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
	}
	return v
}

// wantError checks an error answer's status, code and that its message
// mentions want.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code, want string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	var b api.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("error answer is not JSON: %v: %s", err, rec.Body)
	}
	if b.Error.Code != code || !strings.Contains(b.Error.Message, want) {
		t.Fatalf("error = %+v, want code %q and a message mentioning %q", b.Error, code, want)
	}
}

// tenant is an org with a connection and an endpoint, made through the API.
type tenant struct {
	org  api.Org
	conn api.Connection
	ep   api.Endpoint
}

func (e *env) newTenant(name string) tenant {
	e.t.Helper()
	var tn tenant
	tn.org = must[api.Org](e, 201, "POST", "/api/v1/orgs", staffToken, api.CreateOrgRequest{Name: name})
	tn.conn = must[api.Connection](e, 201, "POST", "/api/v1/connections", tn.org.APIKey, api.CreateConnectionRequest{
		Provider: testProvider, Name: name + " account", Secrets: []string{"whsec_" + name},
	})
	tn.ep = must[api.Endpoint](e, 201, "POST", "/api/v1/endpoints", tn.org.APIKey, api.CreateEndpointRequest{ConnectionID: tn.conn.ID})
	return tn
}

// ingest stores a message received at the tenant's endpoint.
func (e *env) ingest(tn tenant, query string, header http.Header, body string) intake.Message {
	e.t.Helper()
	sum := sha256.Sum256([]byte(body))
	now := e.clock.Now()
	m := intake.Message{
		ID: intake.NewID(), OrgID: tn.org.ID, ConnectionID: tn.conn.ID, EndpointID: tn.ep.ID,
		Method: "POST", Query: query, Header: header, Body: []byte(body), Digest: hex.EncodeToString(sum[:]),
		ReceivedAt: now, State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now,
	}
	if err := e.store.Ingest(context.Background(), &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// dbBytes returns every file of the database (main file, WAL, shared
// memory) concatenated, for checks that something is not stored.
func (e *env) dbBytes() []byte {
	e.t.Helper()
	var all []byte
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, de := range entries {
		b, err := os.ReadFile(filepath.Join(e.dir, de.Name()))
		if err != nil {
			e.t.Fatal(err)
		}
		all = append(all, b...)
	}
	if len(all) == 0 {
		e.t.Fatal("no database files")
	}
	return all
}

// event makes an event of type typ in the tenant's org the way the worker
// does: a message is ingested, claimed and settled with the event, which is
// about the given provider objects.
func (e *env) event(tn tenant, typ string, objectIDs ...string) intake.Event {
	e.t.Helper()
	ctx := context.Background()
	m := e.ingest(tn, "", http.Header{}, `{"type":"`+typ+`"}`)
	claims, err := e.store.ClaimMessages(ctx, e.clock.Now(), time.Minute, 1)
	if err != nil || len(claims) != 1 || claims[0].Message.ID != m.ID {
		e.t.Fatalf("claim: %+v %v", claims, err)
	}
	now := e.clock.Now()
	ev := intake.Event{
		ID: intake.NewID(), OrgID: tn.org.ID, ConnectionID: tn.conn.ID, MessageID: m.ID, Provider: testProvider,
		Type: typ, Kind: intake.KindEvent, ProviderEventID: "evt_" + m.ID, OccurredAt: now, ReceivedAt: now,
		Data: []byte(`{}`), ObjectIDs: objectIDs, State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now, CreatedAt: now,
	}
	if _, err := e.store.SettleMessage(ctx, now, intake.Settlement{
		MessageID: m.ID, Attempt: claims[0].Attempt, To: intake.MessageProcessed, Outcome: intake.OutcomeEvents,
		ProviderEventID: ev.ProviderEventID, Events: []intake.Event{ev},
	}); err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// route moves ev as the router would (see testkit.Route): to state to,
// recording deliveries.
func (e *env) route(ev intake.Event, to intake.EventState, deliveries ...intake.Delivery) {
	e.t.Helper()
	testkit.Route(e.t, e.store, e.clock.Now(), ev.ID, to, deliveries...)
}

// learn has the event-type catalog learn from events, as the worker's
// learner does after their settle.
func (e *env) learn(events ...intake.Event) {
	e.t.Helper()
	l := catalog.New(catalog.Config{Store: e.store, Clock: e.clock})
	l.Observe(events)
	if err := l.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}
