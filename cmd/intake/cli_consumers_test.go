package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/internal/testkit"
)

// tenant is an org with a connection, made through the CLI.
type tenant struct {
	org  api.Org
	conn api.Connection
	ep   api.Endpoint
}

func (s server) newTenant(t *testing.T, name string) tenant {
	t.Helper()
	var tn tenant
	tn.org = decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", name))
	tn.conn = decodeOut[api.Connection](t, s.mustRunJSON(t, tn.org.APIKey, "connections", "create", "--provider", "none", "--name", name))
	tn.ep = decodeOut[api.Endpoint](t, s.mustRunJSON(t, tn.org.APIKey, "endpoints", "create", "--connection", tn.conn.ID))
	return tn
}

// routedEvent makes an event in the tenant's org as the worker does and
// settles one routing attempt of it as the router does: to state to, with
// deliveries.
func (s server) routedEvent(t *testing.T, tn tenant, typ string, to intake.EventState, deliveries ...intake.Delivery) intake.Event {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	body := `{"type":"` + typ + `"}`
	sum := sha256.Sum256([]byte(body))
	m := intake.Message{
		ID: intake.NewID(), OrgID: tn.org.ID, ConnectionID: tn.conn.ID, EndpointID: tn.ep.ID, Method: "POST",
		Header: http.Header{}, Body: []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: now,
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now,
	}
	if err := s.store.Ingest(ctx, &m); err != nil {
		t.Fatal(err)
	}
	claims, err := s.store.ClaimMessages(ctx, now, time.Minute, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim message: %+v %v", claims, err)
	}
	ev := intake.Event{
		ID: intake.NewID(), OrgID: tn.org.ID, ConnectionID: tn.conn.ID, MessageID: m.ID, Provider: "none", Type: typ,
		Kind: intake.KindEvent, OccurredAt: now, ReceivedAt: now, Data: json.RawMessage(`{}`), State: intake.EventPending,
		MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now, CreatedAt: now,
	}
	if _, err := s.store.SettleMessage(ctx, now, intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt,
		To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, Events: []intake.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	for i := range deliveries {
		deliveries[i].At = now
	}
	testkit.Route(t, s.store, now, ev.ID, to, deliveries...)
	return ev
}

func TestCLIConsumersAddPrintsTheSecretOnceAndWarnsOnStderr(t *testing.T) {
	s := newServer(t)
	acme := s.newTenant(t, "acme")
	out, stderr, err := s.runWithStderr(t, staffToken, "consumers", "add", "--org", acme.org.ID, "--name", "invoices",
		"--app", "billing", "--url", "http://127.0.0.1:9000/hooks", "--event-type", "stripe.invoice.*", "--event-type", "github.push", "--completion")
	if err != nil {
		t.Fatal(err)
	}
	// A person reads key: value lines; the secret among them, once.
	kv := keyValues(t, out)
	if !strings.HasPrefix(kv["signing_secret"], "whsec_") || kv["org_id"] != acme.org.ID || kv["app"] != "billing" ||
		kv["completion"] != "true" || kv["enabled"] != "true" || kv["event_types"] != "stripe.invoice.*, github.push" {
		t.Fatalf("consumers add: %s", out)
	}
	c := api.Consumer{ID: kv["id"], SigningSecret: kv["signing_secret"]}
	if !strings.Contains(stderr, "will not be shown again") || strings.Contains(stderr, c.SigningSecret) {
		t.Fatalf("stderr = %q, want a note that the secret will not be shown again", stderr)
	}

	later := []string{
		s.mustRun(t, acme.org.APIKey, "consumers", "list"),
		s.mustRun(t, acme.org.APIKey, "consumers", "list", "--json"),
		s.mustRun(t, acme.org.APIKey, "consumers", "show", c.ID),
	}
	for _, o := range later {
		if strings.Contains(o, strings.TrimPrefix(c.SigningSecret, "whsec_")) {
			t.Fatalf("the secret is shown again: %s", o)
		}
	}
	rows := table(t, later[0])
	if strings.Join(rows[0], " ") != "ID NAME APP URL TYPES COMPLETION STATE" || len(rows) != 2 {
		t.Fatalf("consumers table: %q", rows)
	}
	if want := []string{c.ID, "invoices", "billing", "http://127.0.0.1:9000/hooks", "stripe.invoice.*,github.push", "true", "enabled"}; strings.Join(rows[1], " ") != strings.Join(want, " ") {
		t.Fatalf("consumers row: %q, want %q", rows[1], want)
	}

	if got := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "disable", c.ID)); got.Enabled || got.SigningSecret != "" {
		t.Fatalf("after disable: %+v", got)
	}
	if rows := table(t, s.mustRun(t, acme.org.APIKey, "consumers", "list")); rows[1][6] != "disabled" {
		t.Fatalf("list after disable: %q", rows)
	}
	if got := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "enable", c.ID)); !got.Enabled {
		t.Fatalf("after enable: %+v", got)
	}

	globex := s.newTenant(t, "globex")
	if got := decodeOut[api.List[api.Consumer]](t, s.mustRunJSON(t, globex.org.APIKey, "consumers", "list", "--json")); got.Items == nil || len(got.Items) != 0 {
		t.Fatalf("globex lists acme's consumers: %+v", got)
	}
	if _, err := s.run(t, globex.org.APIKey, "consumers", "disable", c.ID); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("globex disabling acme's consumer: %v", err)
	}
}

func TestCLILinksAnObjectToAnAppRecordInItsOwnOrgOnly(t *testing.T) {
	s := newServer(t)
	acme, globex := s.newTenant(t, "acme"), s.newTenant(t, "globex")
	link := decodeOut[api.SubjectLink](t, s.mustRunJSON(t, acme.org.APIKey, "links", "add",
		"--connection", acme.conn.ID, "--object", "in_123", "--app", "billing", "--record", "invoice-42"))
	if link.ID == "" || link.ConnectionID != acme.conn.ID || link.ProviderObjectID != "in_123" || link.App != "billing" || link.RecordID != "invoice-42" {
		t.Fatalf("link: %+v", link)
	}
	out, err := s.run(t, acme.org.APIKey, "links", "add", "--connection", globex.conn.ID, "--object", "in_1", "--app", "billing", "--record", "r")
	if err == nil || !strings.Contains(err.Error(), "not found") || out != "" {
		t.Fatalf("linking globex's connection with acme's key: %v %q", err, out)
	}
}

func TestCLIEventsShowIncludesDeliveriesAndUnclaimedListsEveryOrg(t *testing.T) {
	s := newServer(t)
	acme, globex := s.newTenant(t, "acme"), s.newTenant(t, "globex")
	c := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "add", "--name", "hook", "--app", "billing",
		"--url", "http://127.0.0.1:9/", "--event-type", "*"))
	delivered := s.routedEvent(t, acme, "none.thing.done", intake.EventRetrying,
		intake.Delivery{ConsumerID: c.ID, Outcome: intake.DeliveryRetry, StatusCode: 500, Latency: 3 * time.Millisecond, Error: "answered 500"})

	shown := decodeOut[api.EventDetail](t, s.mustRunJSON(t, acme.org.APIKey, "events", "show", delivered.ID))
	if shown.ID != delivered.ID || shown.State != "retrying" || len(shown.Deliveries) != 1 {
		t.Fatalf("events show: %+v", shown)
	}
	if d := shown.Deliveries[0]; d.ConsumerID != c.ID || d.Attempt != 1 || d.Outcome != "retry" || d.StatusCode != 500 || d.LatencyMS != 3 || d.Error != "answered 500" {
		t.Fatalf("delivery: %+v", d)
	}

	// Read by a person: each delivery's attempt one way, and the answer.
	failed := s.routedEvent(t, acme, "none.thing.failed", intake.EventRetrying,
		intake.Delivery{ConsumerID: c.ID, Outcome: intake.DeliveryRetry, StatusCode: 500, Error: "consumer answered 500",
			Response: &intake.DeliveryResponse{Status: 500, Headers: map[string]string{"content-type": "application/json"},
				Body: "{\"error\":\"boom\"}\nsecond line", BodyEncoding: "text"}},
	)
	out := s.mustRun(t, acme.org.APIKey, "events", "show", failed.ID)
	for _, want := range []string{"\ndeliveries:\n", "1 of 6", "\nanswers:\n", "  hook, attempt 1 of 6, ", ": 500\n",
		"    content-type: application/json\n", "    body:\n      {\"error\":\"boom\"}\n      second line\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("events show lacks %q:\n%s", want, out)
		}
	}
	if kv := keyValues(t, out); kv["id"] != failed.ID || kv["state"] != "retrying" {
		t.Fatalf("events show: %v", kv)
	}

	a := s.routedEvent(t, acme, "none.nobody.cares", intake.EventNoConsumer)
	g := s.routedEvent(t, globex, "none.nobody.cares", intake.EventNoConsumer)
	rows := table(t, s.mustRun(t, staffToken, "events", "unclaimed"))
	if strings.Join(rows[0], " ") != "ID ORG OCCURRED TYPE KIND CONNECTION" || len(rows) != 3 ||
		rows[1][0] != g.ID || rows[1][1] != globex.org.ID || rows[2][0] != a.ID || rows[2][1] != acme.org.ID {
		t.Fatalf("unclaimed table: %q", rows)
	}
	page := decodeOut[api.List[api.Event]](t, s.mustRunJSON(t, staffToken, "events", "unclaimed", "--json", "--limit", "1"))
	if len(page.Items) != 1 || page.Items[0].ID != g.ID || page.NextCursor != g.ID {
		t.Fatalf("unclaimed --json: %+v", page)
	}
	if _, err := s.run(t, acme.org.APIKey, "events", "unclaimed"); err == nil || !strings.Contains(err.Error(), "only the staff token") {
		t.Fatalf("unclaimed with an org key: %v", err)
	}
}

// The server is --server (or INTAKE_URL) and a consumer's address --url,
// so README's `consumers add --url …` works as typed and never retargets
// the CLI.
func TestCLIConsumersAddTakesTheConsumerURLAsURLAndTheServerAsServer(t *testing.T) {
	s := newServer(t)
	acme := s.newTenant(t, "acme")
	// The harness gives --server s.url before the command; --url is the
	// consumer's.
	c := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "add", "--name", "tracker", "--app", "tracker",
		"--url", "http://127.0.0.1:3000/hooks", "--event-type", "github.*", "--rate", "5", "--max-in-flight", "2",
		"--ordering", "subject", "--retry-attempts", "3", "--retry-base", "30s", "--breaker-failures", "4",
		"--auto-disable-after", "24h", "--paused", "--disabled"))
	if c.URL != "http://127.0.0.1:3000/hooks" || c.RatePerSec != 5 || c.MaxInFlight == nil || *c.MaxInFlight != 2 ||
		c.Ordering != "subject" || c.RetryAttempts != 3 || c.RetryBase != "30s" || c.BreakerFailures != 4 ||
		c.AutoDisableAfter != "24h0m0s" || !c.Paused || c.Enabled {
		t.Fatalf("consumers add with controls: %+v", c)
	}

	// INTAKE_URL still names the server.
	t.Setenv("INTAKE_URL", s.url)
	var cli CLI
	var out bytes.Buffer
	cli.Client.out = &out
	parser, err := kong.New(&cli, kong.Name("intake"), kong.Exit(func(code int) { t.Fatalf("exited %d", code) }))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse([]string{"--token", acme.org.APIKey, "consumers", "add", "--name", "second", "--app", "tracker",
		"--url", "http://127.0.0.1:3001/hooks", "--event-type", "*", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	if err := kctx.Run(&cli.Client); err != nil {
		t.Fatal(err)
	}
	if got := decodeOut[api.Consumer](t, out.String()); got.URL != "http://127.0.0.1:3001/hooks" || cli.Client.Server != s.url {
		t.Fatalf("with INTAKE_URL: consumer %+v, server %q", got, cli.Client.Server)
	}

	// The old global --url is refused with where the server's address went,
	// not taken for one.
	_, err = parser.Parse([]string{"--url", s.url, "consumers", "list"})
	if err = serverFlagHint(err); err == nil || !strings.Contains(err.Error(), "--server (or INTAKE_URL)") {
		t.Fatalf("global --url: %v", err)
	}
	// A bad control is refused with the server's message.
	if _, err := s.run(t, acme.org.APIKey, "consumers", "add", "--name", "bad", "--app", "a", "--url", "http://127.0.0.1:9/",
		"--event-type", "*", "--max-in-flight=-3"); err == nil || !strings.Contains(err.Error(), "max_in_flight must be between 1") {
		t.Fatalf("a bad control: %v", err)
	}
}

func TestCLIConsumersUpdateChangesNameURLAndEventTypes(t *testing.T) {
	s := newServer(t)
	acme := s.newTenant(t, "acme")
	c := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "add", "--name", "orders", "--app", "shop",
		"--url", "http://127.0.0.1:9/orders", "--event-type", "stripe.*", "--rate", "7"))
	got := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "update", c.ID, "--name", "invoices",
		"--url", "http://127.0.0.1:9/invoices", "--event-type", "stripe.invoice.*", "--event-type", "github.push"))
	if got.Name != "invoices" || got.URL != "http://127.0.0.1:9/invoices" || strings.Join(got.EventTypes, " ") != "stripe.invoice.* github.push" ||
		got.RatePerSec != 7 || got.App != "shop" {
		t.Fatalf("consumers update: %+v", got)
	}
	// Only what is given changes.
	got = decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "update", c.ID, "--max-in-flight", "none"))
	if got.Name != "invoices" || got.URL != "http://127.0.0.1:9/invoices" || len(got.EventTypes) != 2 || got.MaxInFlight != nil {
		t.Fatalf("consumers update --max-in-flight none: %+v", got)
	}
	if _, err := s.run(t, acme.org.APIKey, "consumers", "update", c.ID, "--url", "http://169.254.169.254/"); err == nil ||
		!strings.Contains(err.Error(), "consumer address policy") {
		t.Fatalf("update to a refused address: %v", err)
	}
	if _, err := s.run(t, acme.org.APIKey, "consumers", "update", c.ID); err == nil || !strings.Contains(err.Error(), "--name, --url, --event-type") {
		t.Fatalf("update with nothing: %v", err)
	}
}

func TestCLIDeadEventsListTheConsumerItsAttemptsAndItsLastError(t *testing.T) {
	s := newServer(t)
	acme := s.newTenant(t, "acme")
	c := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "add", "--name", "hook", "--app", "billing",
		"--url", "http://127.0.0.1:9/", "--event-type", "*"))
	s.mustRun(t, acme.org.APIKey, "consumers", "update", c.ID, "--retry-attempts", "1")
	dead := s.routedEvent(t, acme, "none.thing.done", intake.EventDead,
		intake.Delivery{ConsumerID: c.ID, Outcome: intake.DeliveryRetry, StatusCode: 500, Error: "answered 500"})

	out := s.mustRun(t, acme.org.APIKey, "events", "list", "--state", "dead")
	rows := table(t, out)
	if strings.Join(rows[0], " ") != "ID OCCURRED TYPE CONSUMER ATTEMPT LAST ERROR" || len(rows) != 2 ||
		rows[1][0] != dead.ID || rows[1][3] != "hook" || strings.Join(rows[1][4:7], " ") != "1 of 1" || !strings.HasSuffix(out, "answered 500\n") {
		t.Fatalf("dead events:\n%s", out)
	}
}
