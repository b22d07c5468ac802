package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/rules"
	"github.com/intakehq/intake/store/sqlite"
)

// applyEnv is a control plane on an empty store, acted on by staff.
type applyEnv struct {
	store  *sqlite.Store
	sealer *seal.Sealer
	engine *rules.Engine // scripts get 10 s: their limits are not what these tests judge
	ctl    *control.Plane
	staff  control.Caller
}

func newApplyEnv(t *testing.T) *applyEnv {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sealer := testkit.Sealer(t)
	clk := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	// Scripts' time limits are not what these tests judge: a loaded machine
	// takes more than the default 50 ms to start a script host and load a
	// script.
	engine, err := rules.New(rules.Config{ScriptTimeout: 10 * time.Second}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(engine.Close)
	return &applyEnv{store: s, sealer: sealer, engine: engine, staff: control.Caller{Actor: "staff"},
		ctl: control.New(control.Config{Store: s, Sealer: sealer, Clock: clk, Rules: engine, PublicURL: "https://hooks.example"})}
}

func (e *applyEnv) apply(t *testing.T, c control.Caller, doc control.Document, opts control.ApplyOptions) control.Plan {
	t.Helper()
	plan, err := e.ctl.Apply(context.Background(), c, doc, opts)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return plan
}

// audited is how many audit entries the store holds.
func (e *applyEnv) audited(t *testing.T) int {
	t.Helper()
	n := 0
	f := intake.AuditFilter{Limit: 100}
	for {
		page, err := e.store.ListAudit(context.Background(), intake.Scope{}, f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
		if page.NextCursor == "" {
			return n
		}
		f.Cursor = page.NextCursor
	}
}

const interpretScript = `function interpret(request) { return [{type: "acme." + request.json.what, data: request.json}] }`

func ptr[T any](v T) *T { return &v }

// acmeDoc is an org with a GitHub connection and its endpoint, an hmac
// connection described by a script, and a consumer with rules.
func acmeDoc() control.Document {
	return control.Document{Orgs: []control.OrgSpec{{
		Name:      "acme",
		Retention: "720h",
		Connections: []control.ConnectionSpec{
			{Name: "github", Provider: "github", Secrets: []string{"gh-secret-1"}, Filter: `event.type != "github.ping"`,
				Endpoints: []control.EndpointSpec{{Name: "primary", RatePerSec: ptr(50.0), Burst: ptr(100)}}},
			{Name: "acme-hooks", Provider: "hmac", Secrets: []string{"acme-secret"},
				Config:    map[string]any{"header": "X-Acme-Signature", "script": interpretScript},
				Endpoints: []control.EndpointSpec{{Name: "in"}}},
		},
		Consumers: []control.ConsumerSpec{
			{Name: "billing", App: "billing", URL: "https://127.0.0.1/billing", EventTypes: []string{"github.*", "acme.*"},
				Filter: `event.type.startsWith("github.")`, Transform: `function transform(event, context) { return {body: event.data} }`},
		},
	}}}
}

func actions(p control.Plan) map[string]string {
	out := map[string]string{}
	for _, c := range p.Changes {
		key := c.Kind + " " + c.Org + "/" + c.Name
		if c.Connection != "" {
			key = c.Kind + " " + c.Org + "/" + c.Connection + "/" + c.Name
		}
		out[key] = c.Action + strings.Join(append([]string{""}, c.Fields...), " ")
	}
	return out
}

func wantActions(t *testing.T, p control.Plan, want map[string]string) {
	t.Helper()
	got := actions(p)
	if len(got) != len(want) {
		t.Errorf("plan has %d changes, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func TestApplyCreatesEverythingTheDocumentNamesAndASecondApplyIsAllUnchanged(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	plan := e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{})
	wantActions(t, plan, map[string]string{
		"org acme/acme":                "create",
		"connection acme/github":       "create",
		"endpoint acme/github/primary": "create",
		"connection acme/acme-hooks":   "create",
		"endpoint acme/acme-hooks/in":  "create",
		"consumer acme/billing":        "create",
	})
	if plan.Unchanged || plan.DryRun {
		t.Fatal("a first apply reports no change")
	}
	// What the server minted is in the plan once: the org's key, the
	// endpoints' tokens and URLs, the consumer's signing secret.
	for _, c := range plan.Changes {
		switch {
		case c.ID == "":
			t.Errorf("%s %s: no id", c.Kind, c.Name)
		case c.Kind == "org" && !strings.HasPrefix(c.APIKey, "ik_"):
			t.Errorf("org key %q", c.APIKey)
		case c.Kind == "endpoint" && (c.Token == "" || c.URL != "https://hooks.example/webhooks/"+c.Token):
			t.Errorf("endpoint %s: token %q url %q", c.Name, c.Token, c.URL)
		case c.Kind == "consumer" && !strings.HasPrefix(c.SigningSecret, "whsec_"):
			t.Errorf("consumer secret %q", c.SigningSecret)
		}
	}

	orgs, _ := e.store.ListOrgs(ctx, intake.Scope{})
	if len(orgs) != 1 || orgs[0].Name != "acme" || orgs[0].Retention != 720*time.Hour {
		t.Fatalf("orgs: %+v", orgs)
	}
	sc := intake.Scope{OrgID: orgs[0].ID}
	conns, _ := e.store.ListConnections(ctx, sc)
	eps, _ := e.store.ListEndpoints(ctx, sc)
	consumers, _ := e.store.ListConsumers(ctx, sc)
	if len(conns) != 2 || len(eps) != 2 || len(consumers) != 1 {
		t.Fatalf("stored %d connections, %d endpoints, %d consumers", len(conns), len(eps), len(consumers))
	}
	for _, cn := range conns {
		opened, err := e.sealer.ConnectionSecrets(cn)
		if err != nil || len(opened) != 1 {
			t.Fatalf("%s secrets: %v %v", cn.Name, opened, err)
		}
		if cn.Name == "acme-hooks" && !strings.Contains(string(cn.Config), "function interpret") {
			t.Fatalf("script not stored: %s", cn.Config)
		}
	}
	for _, ep := range eps {
		if ep.Name == "primary" && (ep.RatePerSec != 50 || ep.Burst != 100 || ep.MaxBodyBytes != intake.DefaultMaxBodyBytes) {
			t.Fatalf("primary: %+v", ep)
		}
	}
	if cs := consumers[0]; cs.Filter == "" || cs.Transform == "" || !cs.Enabled {
		t.Fatalf("consumer: %+v", cs)
	}
	// Each change is audited as the action is: one entry each, and one for
	// the org's retention.
	if n := e.audited(t); n != 7 {
		t.Fatalf("%d audit entries, want 7", n)
	}

	again := e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{Prune: true})
	if !again.Unchanged || len(again.Changes) != 6 {
		t.Fatalf("second apply: %v", actions(again))
	}
	for _, c := range again.Changes {
		if c.APIKey != "" || c.Token != "" || c.SigningSecret != "" {
			t.Fatalf("an unchanged %s shows a secret", c.Kind)
		}
	}
	if n := e.audited(t); n != 7 {
		t.Fatalf("the unchanged apply wrote %d audit entries", n-7)
	}
}

func TestApplyUpdatesWhatChangedNamingTheFieldsButNeverTheSecrets(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{})

	doc := acmeDoc()
	org := &doc.Orgs[0]
	org.Retention = ""
	org.Connections[0].Secrets = []string{"gh-secret-2", "gh-secret-1"}
	org.Connections[0].Filter = `event.type == "github.issues.opened"`
	org.Connections[0].Endpoints[0].RatePerSec = nil // back to the default
	org.Connections[1].Config["script"] = `function interpret(request) { return [{type: "acme.changed", data: {}}] }`
	org.Consumers[0].URL = "https://127.0.0.1/billing/v2"
	org.Consumers[0].Enabled = ptr(false)
	org.Consumers[0].Transform = ""

	dry := e.apply(t, e.staff, doc, control.ApplyOptions{DryRun: true})
	want := map[string]string{
		"org acme/acme":                "update retention",
		"connection acme/github":       "update filter secrets",
		"endpoint acme/github/primary": "update rate_per_sec",
		"connection acme/acme-hooks":   "update config.script",
		"endpoint acme/acme-hooks/in":  "unchanged",
		"consumer acme/billing":        "update url enabled transform",
	}
	wantActions(t, dry, want)
	b, _ := json.Marshal(dry)
	if strings.Contains(string(b), "gh-secret") {
		t.Fatalf("the plan shows a secret: %s", b)
	}

	applied := e.apply(t, e.staff, doc, control.ApplyOptions{})
	wantActions(t, applied, want)
	orgs, _ := e.store.ListOrgs(ctx, intake.Scope{})
	sc := intake.Scope{OrgID: orgs[0].ID}
	conns, _ := e.store.ListConnections(ctx, sc)
	for _, cn := range conns {
		if cn.Name != "github" {
			continue
		}
		opened, _ := e.sealer.ConnectionSecrets(cn)
		if len(opened) != 2 || string(opened[0]) != "gh-secret-2" || cn.Filter != `event.type == "github.issues.opened"` {
			t.Fatalf("github after the update: %d secrets, filter %q", len(opened), cn.Filter)
		}
	}
	cs, _ := e.store.ListConsumers(ctx, sc)
	if cs[0].URL != "https://127.0.0.1/billing/v2" || cs[0].Enabled || cs[0].Transform != "" || cs[0].Filter == "" {
		t.Fatalf("consumer after the update: %+v", cs[0])
	}
	if orgs[0].Retention != 0 {
		t.Fatalf("retention %s, want the server's", orgs[0].Retention)
	}
	if !e.apply(t, e.staff, doc, control.ApplyOptions{}).Unchanged {
		t.Fatal("applying the updated document again changes something")
	}
}

func TestDryRunPlansAndWritesNothing(t *testing.T) {
	e := newApplyEnv(t)
	plan := e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{DryRun: true})
	if !plan.DryRun || len(plan.Changes) != 6 || plan.Unchanged {
		t.Fatalf("dry run: %v", actions(plan))
	}
	for _, c := range plan.Changes {
		if c.Action != control.ActionCreate || c.ID != "" || c.APIKey != "" || c.Token != "" || c.SigningSecret != "" {
			t.Fatalf("dry run change %+v", c)
		}
	}
	if orgs, _ := e.store.ListOrgs(context.Background(), intake.Scope{}); len(orgs) != 0 || e.audited(t) != 0 {
		t.Fatalf("a dry run wrote: %d orgs, %d audit entries", len(orgs), e.audited(t))
	}
}

func TestPruneDeletesWhatTheDocumentNoLongerNamesAndWithoutPruneNothingIsDeleted(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{})
	orgs, _ := e.store.ListOrgs(ctx, intake.Scope{})
	sc := intake.Scope{OrgID: orgs[0].ID}
	// An endpoint made outside apply, unnamed, is not apply's to delete.
	github, _ := e.store.ListConnections(ctx, sc)
	var githubID string
	for _, cn := range github {
		if cn.Name == "github" {
			githubID = cn.ID
		}
	}
	unnamed, err := e.ctl.CreateEndpoint(ctx, e.staff, githubID, control.Limits{})
	if err != nil {
		t.Fatal(err)
	}

	doc := acmeDoc()
	doc.Orgs[0].Connections = doc.Orgs[0].Connections[:1]
	doc.Orgs[0].Connections[0].Endpoints = nil
	doc.Orgs[0].Consumers = nil

	kept := e.apply(t, e.staff, doc, control.ApplyOptions{})
	for _, c := range kept.Changes {
		if c.Action == control.ActionDelete {
			t.Fatalf("without prune: %v", actions(kept))
		}
	}
	if eps, _ := e.store.ListEndpoints(ctx, sc); len(eps) != 3 {
		t.Fatalf("without prune %d endpoints remain, want 3", len(eps))
	}

	pruned := e.apply(t, e.staff, doc, control.ApplyOptions{Prune: true})
	wantActions(t, pruned, map[string]string{
		"org acme/acme":                "unchanged",
		"connection acme/github":       "unchanged",
		"endpoint acme/github/primary": "delete",
		"consumer acme/billing":        "delete",
		"connection acme/acme-hooks":   "delete",
	})
	eps, _ := e.store.ListEndpoints(ctx, sc)
	if len(eps) != 1 || eps[0].ID != unnamed.ID {
		t.Fatalf("after prune the endpoints are %+v, want only the unnamed one", eps)
	}
	if cs, _ := e.store.ListConsumers(ctx, sc); len(cs) != 0 {
		t.Fatalf("consumers after prune: %+v", cs)
	}
	if conns, _ := e.store.ListConnections(ctx, sc); len(conns) != 1 {
		t.Fatalf("connections after prune: %+v", conns)
	}
	if orgs, _ := e.store.ListOrgs(ctx, intake.Scope{}); len(orgs) != 1 {
		t.Fatal("prune touched the org")
	}
}

func TestBadDocumentIsRefusedBeforeAnythingIsWritten(t *testing.T) {
	cases := []struct {
		name string
		edit func(*control.Document)
		code string
		want string
	}{
		{"unknown provider", func(d *control.Document) { d.Orgs[0].Connections[1].Provider = "acmecorp" }, intake.EINVALID, `unknown provider "acmecorp"`},
		{"filter that does not compile", func(d *control.Document) { d.Orgs[0].Consumers[0].Filter = "event.type ==" }, intake.EINVALID, "consumer acme/billing"},
		{"script that does not compile", func(d *control.Document) {
			d.Orgs[0].Connections[1].Config["script"] = "function interpret(request) {"
		}, intake.EINVALID, "connection acme/acme-hooks"},
		{"duplicate connection", func(d *control.Document) {
			d.Orgs[0].Connections = append(d.Orgs[0].Connections, d.Orgs[0].Connections[0])
		}, intake.EINVALID, `names connection "github" twice`},
		{"duplicate endpoint", func(d *control.Document) {
			c := &d.Orgs[0].Connections[0]
			c.Endpoints = append(c.Endpoints, c.Endpoints[0])
		}, intake.EINVALID, `names endpoint "primary" twice`},
		{"duplicate consumer", func(d *control.Document) { d.Orgs[0].Consumers = append(d.Orgs[0].Consumers, d.Orgs[0].Consumers[0]) }, intake.EINVALID, "twice"},
		{"unresolved secret", func(d *control.Document) { d.Orgs[0].Connections[0].Secrets = []string{"${env:GITHUB_SECRET}"} }, intake.EINVALID, "placeholder"},
		{"bad limit", func(d *control.Document) { d.Orgs[0].Connections[1].Endpoints[0].MaxBodyBytes = ptr(int64(-1)) }, intake.EINVALID, "max_body_bytes"},
		{"no event types", func(d *control.Document) { d.Orgs[0].Consumers[0].EventTypes = nil }, intake.EINVALID, "event_types"},
		{"missing secrets", func(d *control.Document) { d.Orgs[0].Connections[0].Secrets = nil }, intake.EINVALID, "secret"},
		{"bad retention", func(d *control.Document) { d.Orgs[0].Retention = "soon" }, intake.EINVALID, "retention"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newApplyEnv(t)
			doc := acmeDoc()
			tc.edit(&doc)
			_, err := e.ctl.Apply(context.Background(), e.staff, doc, control.ApplyOptions{})
			if intake.ErrorCode(err) != tc.code || !strings.Contains(intake.ErrorMessage(err), tc.want) {
				t.Fatalf("err = %v, want %s mentioning %q", err, tc.code, tc.want)
			}
			if orgs, _ := e.store.ListOrgs(context.Background(), intake.Scope{}); len(orgs) != 0 || e.audited(t) != 0 {
				t.Fatalf("a refused document wrote %d orgs", len(orgs))
			}
		})
	}
}

func TestOrgKeyAppliesItsOwnOrgOnlyAndCannotCreateOrgs(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{})
	beta := acmeDoc()
	beta.Orgs[0].Name = "beta"
	e.apply(t, e.staff, beta, control.ApplyOptions{})
	orgs, _ := e.store.ListOrgs(ctx, intake.Scope{})
	var acmeID string
	for _, o := range orgs {
		if o.Name == "acme" {
			acmeID = o.ID
		}
	}
	key := control.Caller{Scope: intake.Scope{OrgID: acmeID}, Actor: "key:ik_test", OrgName: "acme", Role: intake.RoleAdmin}
	before := e.audited(t)

	for _, name := range []string{"beta", "gamma"} {
		doc := acmeDoc()
		doc.Orgs[0].Name = name
		doc.Orgs[0].Consumers = nil
		_, err := e.ctl.Apply(ctx, key, doc, control.ApplyOptions{Prune: true})
		if intake.ErrorCode(err) != intake.EFORBIDDEN {
			t.Fatalf("org key applying %s: %v", name, err)
		}
	}
	// Naming its own org after another's refuses the whole document too.
	both := acmeDoc()
	both.Orgs = append(both.Orgs, beta.Orgs[0])
	if _, err := e.ctl.Apply(ctx, key, both, control.ApplyOptions{}); intake.ErrorCode(err) != intake.EFORBIDDEN {
		t.Fatalf("org key applying two orgs: %v", err)
	}
	if n := e.audited(t); n != before {
		t.Fatalf("refused applies wrote %d audit entries", n-before)
	}

	own := acmeDoc()
	own.Orgs[0].Consumers = nil
	plan := e.apply(t, key, own, control.ApplyOptions{Prune: true})
	if got := actions(plan)["consumer acme/billing"]; got != "delete" {
		t.Fatalf("own org prune: %v", actions(plan))
	}
	for _, o := range orgs {
		cs, _ := e.store.ListConsumers(ctx, intake.Scope{OrgID: o.ID})
		if o.Name == "beta" && len(cs) != 1 {
			t.Fatalf("the org key's apply changed beta: %d consumers", len(cs))
		}
	}
}

func TestExportWritesNoSecretAndApplyingItBackChangesNothing(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{})
	doc, err := e.ctl.Export(ctx, e.staff, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(doc)
	if strings.Contains(string(b), "gh-secret-1") || strings.Contains(string(b), "acme-secret") {
		t.Fatalf("export shows a secret: %s", b)
	}
	conns := doc.Orgs[0].Connections
	if len(conns) != 2 || conns[0].Name != "github" || len(conns[0].Secrets) != 1 || conns[0].Secrets[0] != "${env:ACME_GITHUB_SECRET}" {
		t.Fatalf("exported connections: %+v", conns)
	}
	// The operator fills in the secrets; everything else is as applied.
	secrets := map[string]string{"${env:ACME_GITHUB_SECRET}": "gh-secret-1", "${env:ACME_ACME_HOOKS_SECRET}": "acme-secret"}
	for i := range conns {
		for j, s := range conns[i].Secrets {
			conns[i].Secrets[j] = secrets[s]
		}
	}
	plan := e.apply(t, e.staff, doc, control.ApplyOptions{Prune: true})
	if !plan.Unchanged || len(plan.Changes) != 6 {
		t.Fatalf("applying the export: %v", actions(plan))
	}
}

// Keys are not configuration: an export names none, whoever exports, and
// applying it back (pruning too) leaves every key as it was.
func TestExportWritesNoKeyAndApplyLeavesKeysAlone(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	plan := e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{})
	first := plan.Changes[0].APIKey // an org's first key, minted by its creation, is in that plan once
	acmeID := plan.Changes[0].ID
	k, second, err := e.ctl.CreateKey(ctx, e.staff, acmeID, intake.RoleViewer, "")
	if err != nil || first == "" {
		t.Fatalf("keys: %q %v", first, err)
	}
	viewer := control.Caller{Scope: intake.Scope{OrgID: acmeID}, Actor: "key:" + k.Prefix, OrgName: "acme", Role: intake.RoleViewer}
	var doc control.Document
	for _, who := range []control.Caller{e.staff, viewer} {
		if doc, err = e.ctl.Export(ctx, who, ""); err != nil {
			t.Fatalf("%s exports: %v", who.Actor, err)
		}
		b, _ := json.Marshal(doc)
		for _, leak := range []string{first[:9], second[:9], k.ID, "api_key", "\"role\""} {
			if strings.Contains(string(b), leak) {
				t.Fatalf("%s's export names a key (%s): %s", who.Actor, leak, b)
			}
		}
	}
	before, _ := e.store.ListAPIKeys(ctx, intake.Scope{OrgID: acmeID})
	secrets := map[string]string{"${env:ACME_GITHUB_SECRET}": "gh-secret-1", "${env:ACME_ACME_HOOKS_SECRET}": "acme-secret"}
	for i, cn := range doc.Orgs[0].Connections {
		for j, s := range cn.Secrets {
			doc.Orgs[0].Connections[i].Secrets[j] = secrets[s]
		}
	}
	if plan := e.apply(t, e.staff, doc, control.ApplyOptions{Prune: true}); !plan.Unchanged {
		t.Fatalf("applying the export back: %v", actions(plan))
	}
	after, _ := e.store.ListAPIKeys(ctx, intake.Scope{OrgID: acmeID})
	if len(after) != 2 || len(after) != len(before) || !after[0].RevokedAt.IsZero() || !after[1].RevokedAt.IsZero() {
		t.Fatalf("keys after applying the export: %+v, before %+v", after, before)
	}
}

// failConsumerCreate is a store whose next consumer insert fails, as a
// lost connection would make it.
type failConsumerCreate struct {
	intake.Store
	failed bool
}

func (s *failConsumerCreate) CreateConsumer(ctx context.Context, c intake.Consumer, audit ...intake.AuditEntry) error {
	if !s.failed {
		s.failed = true
		return intake.Unavailable(context.DeadlineExceeded)
	}
	return s.Store.CreateConsumer(ctx, c, audit...)
}

func TestApplyStoppedPartWayNamesTheChangeAndApplyingAgainFinishes(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	st := &failConsumerCreate{Store: e.store}
	ctl := control.New(control.Config{Store: st, Sealer: e.sealer, Rules: e.engine})
	_, err := ctl.Apply(ctx, e.staff, acmeDoc(), control.ApplyOptions{})
	if intake.ErrorCode(err) != intake.EUNAVAILABLE || !strings.Contains(intake.ErrorMessage(err), "create consumer acme/billing") ||
		!strings.Contains(intake.ErrorMessage(err), "applying again finishes the rest") {
		t.Fatalf("err = %v", err)
	}
	plan, err := ctl.Apply(ctx, e.staff, acmeDoc(), control.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantActions(t, plan, map[string]string{
		"org acme/acme":                "unchanged",
		"connection acme/github":       "unchanged",
		"endpoint acme/github/primary": "unchanged",
		"connection acme/acme-hooks":   "unchanged",
		"endpoint acme/acme-hooks/in":  "unchanged",
		"consumer acme/billing":        "create",
	})
}

func TestApplySetsNotificationsShowsTheirSecretOnceAndExportHidesTheSlackURL(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	doc := acmeDoc()
	doc.Orgs[0].Notifications = &control.NotificationsSpec{URL: "https://127.0.0.1/ops",
		SlackWebhookURL: "https://127.0.0.1/services/T0/B0/secret-part", Topics: []string{"consumer.tripped", "event.dead"}}
	plan := e.apply(t, e.staff, doc, control.ApplyOptions{})
	var secret string
	for _, c := range plan.Changes {
		if c.Kind == "notifications" {
			secret = c.SigningSecret
			if c.Action != control.ActionCreate {
				t.Fatalf("notifications change %+v, want a create", c)
			}
		}
	}
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the first apply's plan shows no notification secret: %+v", plan.Changes)
	}
	again := e.apply(t, e.staff, doc, control.ApplyOptions{})
	if !again.Unchanged {
		t.Fatalf("a second apply: %v", actions(again))
	}
	for _, c := range again.Changes {
		if c.SigningSecret != "" {
			t.Fatal("a second apply shows the notification secret again")
		}
	}
	doc.Orgs[0].Notifications.Topics = []string{"consumer.tripped"}
	doc.Orgs[0].Notifications.SlackWebhookURL = "https://127.0.0.1/services/T0/B0/rotated"
	if got := actions(e.apply(t, e.staff, doc, control.ApplyOptions{}))["notifications acme/acme"]; got != "update slack_webhook_url topics" {
		t.Fatalf("changed notifications: %q", got)
	}
	doc.Orgs[0].Notifications.Topics = []string{"no.such.topic"}
	if _, err := e.ctl.Apply(ctx, e.staff, doc, control.ApplyOptions{}); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("an unknown topic: %v", err)
	}

	exported, err := e.ctl.Export(ctx, e.staff, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(exported)
	n := exported.Orgs[0].Notifications
	if strings.Contains(string(b), "rotated") || n == nil || n.SlackWebhookURL != "${env:ACME_SLACK_WEBHOOK_URL}" ||
		n.URL != "https://127.0.0.1/ops" || strings.Join(n.Topics, ",") != "consumer.tripped" {
		t.Fatalf("exported notifications %+v (%s)", n, b)
	}
}

// A consumer's url, event types and name change in place: the same
// consumer (id, secret, history), never a new one beside it, with prune or
// without.
func TestApplyChangesAConsumersURLEventTypesAndNameInPlace(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	e.apply(t, e.staff, acmeDoc(), control.ApplyOptions{})
	orgs, _ := e.store.ListOrgs(ctx, intake.Scope{})
	sc := intake.Scope{OrgID: orgs[0].ID}
	before, _ := e.store.ListConsumers(ctx, sc)

	doc := acmeDoc()
	c := &doc.Orgs[0].Consumers[0]
	c.URL = "https://127.0.0.1/ledger"
	c.EventTypes = []string{"github.push"}
	c.Name, c.RenamedFrom = "ledger", "billing"
	for _, opts := range []control.ApplyOptions{{DryRun: true}, {Prune: true}} {
		wantActions(t, e.apply(t, e.staff, doc, opts), map[string]string{
			"org acme/acme":                "unchanged",
			"connection acme/github":       "unchanged",
			"endpoint acme/github/primary": "unchanged",
			"connection acme/acme-hooks":   "unchanged",
			"endpoint acme/acme-hooks/in":  "unchanged",
			"consumer acme/ledger":         "update name url event_types",
		})
	}
	after, _ := e.store.ListConsumers(ctx, sc)
	if len(after) != 1 || after[0].ID != before[0].ID || after[0].Name != "ledger" || after[0].URL != "https://127.0.0.1/ledger" ||
		strings.Join(after[0].EventTypes, ",") != "github.push" || !bytes.Equal(after[0].SealedSecret, before[0].SealedSecret) {
		t.Fatalf("after renaming: %+v (was %+v)", after, before[0])
	}
	// Once renamed, renamed_from is inert: nothing changes, nothing is made.
	if p := e.apply(t, e.staff, doc, control.ApplyOptions{Prune: true}); !p.Unchanged {
		t.Fatalf("applying the renamed document again: %v", actions(p))
	}

	// Renaming a consumer to a name the document also keeps is refused.
	twice := acmeDoc()
	twice.Orgs[0].Consumers[0].Name = "ledger-2"
	twice.Orgs[0].Consumers[0].RenamedFrom = "ledger"
	twice.Orgs[0].Consumers = append(twice.Orgs[0].Consumers, control.ConsumerSpec{Name: "ledger", App: "billing",
		URL: "https://127.0.0.1/x", EventTypes: []string{"*"}})
	if _, err := e.ctl.Apply(ctx, e.staff, twice, control.ApplyOptions{}); err == nil || !strings.Contains(err.Error(), `renames consumer "ledger"`) {
		t.Fatalf("a rename to a name kept too: %v", err)
	}
}
