package main

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/catalog"
	"github.com/intakehq/intake/console"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/delivery/broker"
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/internal/fair"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/outage"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/internal/redact"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/token"
	"github.com/intakehq/intake/notify"
	"github.com/intakehq/intake/replica"
	"github.com/intakehq/intake/router"
	"github.com/intakehq/intake/rules"
	"github.com/intakehq/intake/store/postgres"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/sweeper"
	"github.com/intakehq/intake/worker"
)

// ServeCmd runs the gateway: ingress, workers and the admin API in one
// process.
type ServeCmd struct {
	Addr                string        `default:":8080" env:"INTAKE_ADDR" help:"Address to listen on."`
	MetricsAddr         string        `name:"metrics-addr" env:"INTAKE_METRICS_ADDR" help:"Serve /metrics on this address of its own, and no longer on --addr; empty: /metrics on --addr."`
	MetricsToken        string        `name:"metrics-token" env:"INTAKE_METRICS_TOKEN" help:"Answer /metrics only to requests with Authorization: Bearer <token> (401 otherwise; prefer the environment variable); empty: to anyone who reaches it."`
	MetricsByConsumer   bool          `name:"metrics-per-consumer" env:"INTAKE_METRICS_PER_CONSUMER" help:"Add series labelled by consumer id to /metrics (deliveries and latency per consumer); off: deliveries count only in aggregates that name no org or consumer."`
	Data                string        `default:"./data" env:"INTAKE_DATA" help:"Data directory (database, generated keys)."`
	DB                  string        `name:"db" env:"INTAKE_DB" help:"Database URL; empty: the embedded store under --data."`
	PublicURL           string        `name:"public-url" env:"INTAKE_PUBLIC_URL" help:"The URL providers reach this server at (default: http://localhost<addr>)."`
	RetryBase           time.Duration `default:"10s" env:"INTAKE_RETRY_BASE" help:"Base of the retry backoff (attempt n+1 waits about base·4^(n-1))."`
	Workers             int           `default:"64" env:"INTAKE_WORKERS" help:"Messages processed at once."`
	IngestFirst         int           `default:"16" env:"INTAKE_INGEST_FIRST" help:"Requests waiting for their commit above which processing holds back to a share of its slots, so ingest keeps the store and the CPU under a burst; 0: never."`
	Lease               time.Duration `default:"30s" env:"INTAKE_LEASE" help:"How long a processing attempt may run before another worker takes it over."`
	IssueBacklogAge     time.Duration `default:"15m" env:"INTAKE_ISSUE_BACKLOG_AGE" help:"How long a consumer's oldest due or held event may wait before its backlog is an issue."`
	BodyRetention       time.Duration `default:"168h" env:"INTAKE_BODY_RETENTION" help:"How long raw bodies are kept (the replay window); an org's own may be shorter, not longer."`
	Retention           time.Duration `default:"720h" env:"INTAKE_RETENTION" help:"How long messages, events and deliveries are kept; an org's own may be shorter, not longer."`
	RetentionRate       float64       `default:"1000" env:"INTAKE_RETENTION_RATE" help:"Expired bodies, and expired messages with all that hangs off them, deleted per second at most: a backlog leaves at this pace beside the writes acks wait for."`
	StoreWait           time.Duration `name:"store-wait" default:"5s" env:"INTAKE_STORE_WAIT" help:"How long ingress waits for the store (an endpoint's lookup; on PostgreSQL, a webhook's commit; object storage taking a large body) before it answers 503; a commit may still land, and the provider's retry is deduplicated."`
	DeliveryTimeout     time.Duration `default:"10s" env:"INTAKE_DELIVERY_TIMEOUT" help:"How long a consumer may take to answer a delivery."`
	Calls               int           `default:"256" env:"INTAKE_CALLS" help:"Calls to consumers made at once by this process; one org may hold at most three quarters of them while it is alone, three eighths while another org holds some, and so on."`
	ConsumerCalls       int           `default:"64" env:"INTAKE_CONSUMER_CALLS" help:"Calls to one consumer made at once by this process, unless the consumer sets its own max_in_flight."`
	LogFormat           string        `default:"text" enum:"text,json" env:"INTAKE_LOG_FORMAT" help:"Log format: text or json."`
	LogLevel            string        `default:"info" enum:"debug,info,warn,error" env:"INTAKE_LOG_LEVEL" help:"Log level."`
	StorageQuota        int64         `name:"storage-quota-bytes" default:"0" env:"INTAKE_STORAGE_QUOTA_BYTES" help:"Refuse webhooks (503) while the store holds more than this many bytes; 0: no quota."`
	BlobStore           string        `name:"blob-store" env:"INTAKE_BLOB_STORE" placeholder:"s3://BUCKET?endpoint=URL&region=REGION" help:"Keep every body larger than --blob-threshold in this S3-compatible bucket (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or in a directory (file:///PATH); endpoints may then take bodies up to 100 MiB. Empty: the embedded store spools them to files under --data/bodies; on PostgreSQL every body stays in the database."`
	BlobThreshold       int64         `name:"blob-threshold" default:"262144" env:"INTAKE_BLOB_THRESHOLD" help:"Bodies larger than this many bytes go to the blob store (or the embedded store's spool)."`
	MaxBodyBytes        int64         `name:"max-body-bytes" default:"10485760" env:"INTAKE_MAX_BODY_BYTES" help:"Largest body any endpoint takes, whatever its own max_body_bytes: up to 104857600 (100 MiB); on PostgreSQL without --blob-store up to 10485760 (10 MiB)."`
	BodyMemory          int64         `name:"body-memory" default:"268435456" env:"INTAKE_BODY_MEMORY" help:"Bytes of request bodies held in memory at once, from their first byte read to their commit, each org at most its fair share; a body that does not fit waits a second, then is answered 503 with Retry-After."`
	ReadHeaderTimeout   time.Duration `default:"10s" env:"INTAKE_READ_HEADER_TIMEOUT" help:"How long a client may take to send request headers."`
	ReadTimeout         time.Duration `default:"60s" env:"INTAKE_READ_TIMEOUT" help:"How long a client may take to send a whole request."`
	ShutdownGrace       time.Duration `default:"30s" env:"INTAKE_SHUTDOWN_GRACE" help:"How long SIGTERM waits for in-flight requests."`
	ScriptTimeout       time.Duration `default:"50ms" env:"INTAKE_SCRIPT_TIMEOUT" help:"How long one call of a rule (filter, transform, interpret script) may run."`
	ScriptMemory        int           `default:"16777216" env:"INTAKE_SCRIPT_MEMORY" help:"Bytes of memory one JavaScript VM may use."`
	ScriptHosts         int           `default:"0" env:"INTAKE_SCRIPT_HOSTS" help:"Child processes that run JavaScript rules, one call at a time each; 0: two per CPU, at least four."`
	NotifyInterval      time.Duration `default:"5s" env:"INTAKE_NOTIFY_INTERVAL" help:"How often the notifier looks for operational notices to send."`
	Catalog             bool          `default:"true" negatable:"" env:"INTAKE_CATALOG" help:"Learn the event types received: counts, an inferred JSON Schema, and its drift (schema.changed notices); --no-catalog turns it off."`
	ReadDeadline        time.Duration `default:"5s" env:"INTAKE_READ_DEADLINE" help:"How long one operator read (a list, a search, a count, an export, the overview) may run before it is stopped and answered 503."`
	Reads               int           `default:"4" env:"INTAKE_READS" help:"Operator reads run at once by this process, on connections of their own the pipeline never waits for; each org at most its fair share of them."`
	ReadsPerOrg         int           `default:"2" env:"INTAKE_READS_PER_ORG" help:"Operator reads one org runs at once; past it a read waits a second, then is answered 429 with Retry-After."`
	ConsumerTests       int           `name:"consumer-tests" default:"32" env:"INTAKE_CONSUMER_TESTS" help:"Consumer tests (POST /consumers/{id}/test) run at once by this process, each org at most its fair share; past it 429 with Retry-After."`
	ConsumerTestsPerOrg int           `name:"consumer-tests-per-org" default:"4" env:"INTAKE_CONSUMER_TESTS_PER_ORG" help:"Consumer tests one org runs at once."`
	ConsumerTestsPerSec float64       `name:"consumer-tests-per-sec" default:"2" env:"INTAKE_CONSUMER_TESTS_PER_SEC" help:"Consumer tests one org may start per second."`
	ConsumerTestsBurst  int           `name:"consumer-tests-burst" default:"20" env:"INTAKE_CONSUMER_TESTS_BURST" help:"Consumer tests one org may start at once before --consumer-tests-per-sec paces them."`
	BodyReads           int           `name:"body-reads" default:"16" env:"INTAKE_BODY_READS" help:"Raw bodies (GET /messages/{id}/body, the console's body view, signed body_url addresses) read at once by this process, each held until sent; each org at most its fair share; past it 429 with Retry-After."`
	BodyReadsPerOrg     int           `name:"body-reads-per-org" default:"2" env:"INTAKE_BODY_READS_PER_ORG" help:"Raw bodies one org reads at once."`
	NotifyCalls         int           `name:"notify-calls" default:"32" env:"INTAKE_NOTIFY_CALLS" help:"Notification calls in flight at once; each receiver takes one at a time."`
	NotifyCallsPerOrg   int           `name:"notify-calls-per-org" default:"4" env:"INTAKE_NOTIFY_CALLS_PER_ORG" help:"Notification calls one org's receivers have in flight at once."`
	BulkMax             int           `name:"bulk-max" default:"10000" env:"INTAKE_BULK_MAX" help:"Most rows a bulk re-route or replay takes at once; a search selecting more is refused unless confirmed, and then runs as a paced job."`
	CatalogTypes        int           `name:"catalog-types-per-connection" default:"1000" env:"INTAKE_CATALOG_TYPES_PER_CONNECTION" help:"Event types the catalog records per connection; past it, new types are counted under one more, other, with no schema, and one schema.changed notice says so."`
	OrgEventsPerSec     float64       `name:"org-events-per-sec" default:"2000" env:"INTAKE_ORG_EVENTS_PER_SEC" help:"Events one org's messages may make per second in this process; past it (and its burst) the org's messages wait queued while other orgs' flow. Nothing is refused or lost."`
	OrgEventsBurst      int           `name:"org-events-burst" default:"10000" env:"INTAKE_ORG_EVENTS_BURST" help:"Events one org's messages may make at once before --org-events-per-sec paces them."`
	ConsumerDeny        []string      `name:"consumer-deny" env:"INTAKE_CONSUMER_DENY" placeholder:"CIDR" help:"Refuse consumer and notification URLs in these ranges, beside the metadata and link-local addresses always refused (repeatable, or comma-separated), e.g. 10.0.0.0/8."`
	ConsumerAllow       []string      `name:"consumer-allow" env:"INTAKE_CONSUMER_ALLOW" placeholder:"CIDR" help:"Reach consumers and notification receivers only in these ranges (repeatable, or comma-separated); what is refused stays refused."`
	OIDCIssuer          string        `name:"oidc-issuer" env:"INTAKE_OIDC_ISSUER" placeholder:"URL" help:"OpenID Connect issuer the console signs people in at (single sign-on); empty: token sign-in only."`
	OIDCClientID        string        `name:"oidc-client-id" env:"INTAKE_OIDC_CLIENT_ID" help:"The console's client id at the issuer."`
	OIDCClientSecret    string        `name:"oidc-client-secret" env:"INTAKE_OIDC_CLIENT_SECRET" help:"The console's client secret at the issuer (prefer the environment variable); empty for a public client."`
	OIDCClaim           string        `name:"oidc-claim" default:"groups" env:"INTAKE_OIDC_CLAIM" help:"The ID token claim that holds a person's groups: a list of strings, or one string."`
	OIDCMap             []string      `name:"oidc-map" env:"INTAKE_OIDC_MAP" placeholder:"GROUP=ORG:ROLE" help:"What a group gives (repeatable, or comma-separated): group=staff, or group=org:role, the org by name, the role viewer, operator or admin (default viewer). A person in several orgs signs in to the first mapped."`
	OIDCScope           []string      `name:"oidc-scope" default:"email" env:"INTAKE_OIDC_SCOPE" help:"Scopes asked for beside openid (repeatable, or comma-separated), e.g. groups."`
	Replicate           string        `name:"replicate" env:"INTAKE_REPLICATE" placeholder:"URL" help:"Ship the embedded store continuously to object storage (s3://BUCKET/PATH?endpoint=URL&region=REGION, credentials as for --blob-store) or to a directory (file:///PATH), from which intake restore rebuilds it to a point in time; a data directory that holds no store is restored from it first. Without --blob-store, large bodies go beside it (PATH/bodies), or where the store recorded them (a store restored to a time keeps them where they were). Not with --db: PostgreSQL keeps its own replication."`
	ReplicateSync       bool          `name:"replicate-sync" env:"INTAKE_REPLICATE_SYNC" help:"With --replicate: acknowledge a webhook only once its commit is in the replica; while the replica cannot be reached, answer 503 with Retry-After."`
	ReplicateInterval   time.Duration `name:"replicate-interval" default:"1s" env:"INTAKE_REPLICATE_INTERVAL" help:"With --replicate: how often new commits are looked for and shipped when none waits for them, and how soon a failed sync is tried again. Without --replicate-sync the replica lags by about one to two of it."`
	ReplicateSnapshots  time.Duration `name:"replicate-snapshot-interval" default:"24h" env:"INTAKE_REPLICATE_SNAPSHOT_INTERVAL" help:"With --replicate: how often a whole snapshot of the store is shipped; a restore reads the last snapshot and every commit since."`
	ReplicateRetention  time.Duration `name:"replicate-retention" default:"24h" env:"INTAKE_REPLICATE_RETENTION" help:"With --replicate: how long the replica keeps snapshots, so how far back intake restore --to-time reaches; the objects of deleted bodies (and orphans) are kept as long, for such a restore."`

	// clock is the one clock every part of the process reads (the system's,
	// set by Run).
	clock intake.Clock
}

// Run serves until SIGTERM or SIGINT, then drains and exits: it checks
// the flags, opens what the process keeps (the master key, the store, the
// replica, object storage), wires the parts over them, serves, and drains.
func (c *ServeCmd) Run() error {
	// An outage of PostgreSQL or of object storage is logged when it
	// begins and ends, and what fails because of it once per kind in
	// between.
	c.clock = intake.SystemClock{}
	base := c.logger()
	watches := watches{store: outage.New("postgres", base, c.clock), blobs: outage.New("object storage", base, c.clock)}
	log := slog.New(watches.store.Handler(watches.blobs.Handler(base.Handler())))
	set, err := c.check(log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	flushTraces, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer flushTraces()
	o, err := c.open(ctx, log, watches)
	if err != nil {
		return err
	}
	defer o.close(log)
	p, err := c.wire(ctx, log, set, o)
	if err != nil {
		return err
	}
	defer p.close()
	return c.serve(ctx, log, p)
}

// watches follow the dependencies whose outages are logged as one.
type watches struct{ store, blobs *outage.Watch }

// settings are what the flags come to once checked, before anything is
// opened.
type settings struct {
	policy     delivery.Policy
	bodyMemory *fair.Budget
	sso        console.SingleSignOn
	people     intake.PeopleMap
}

// check refuses flags out of their range and reads those that take
// parsing.
func (c *ServeCmd) check(log *slog.Logger) (settings, error) {
	var set settings
	if c.RetentionRate <= 0 {
		return set, errors.New("--retention-rate must be above 0 deletes a second")
	}
	if c.OrgEventsPerSec <= 0 || c.OrgEventsBurst < 1 {
		return set, errors.New("--org-events-per-sec must be above 0 and --org-events-burst at least 1")
	}
	if c.ReadDeadline <= 0 || c.Reads < 1 || c.ReadsPerOrg < 1 || c.BulkMax < 1 {
		return set, errors.New("--read-deadline, --reads, --reads-per-org and --bulk-max must be above 0")
	}
	if c.ConsumerTests < 1 || c.ConsumerTestsPerOrg < 1 || c.ConsumerTestsPerSec <= 0 || c.ConsumerTestsBurst < 1 ||
		c.BodyReads < 1 || c.BodyReadsPerOrg < 1 || c.NotifyCalls < 1 || c.NotifyCallsPerOrg < 1 {
		return set, errors.New("--consumer-tests, --consumer-tests-per-org, --consumer-tests-per-sec, --consumer-tests-burst, --body-reads, --body-reads-per-org, --notify-calls and --notify-calls-per-org must be above 0")
	}
	if c.CatalogTypes < 1 {
		return set, errors.New("--catalog-types-per-connection must be at least 1")
	}
	if err := c.checkReplicate(); err != nil {
		return set, err
	}
	var err error
	if set.policy, err = c.consumerPolicy(); err != nil {
		return set, err
	}
	if set.bodyMemory, err = c.bodyMemory(); err != nil {
		return set, err
	}
	if len(c.ConsumerDeny)+len(c.ConsumerAllow) > 0 {
		log.Info("consumer address policy tightened", "deny", c.ConsumerDeny, "allow", c.ConsumerAllow)
	}
	set.sso, set.people, err = c.singleSignOn()
	return set, err
}

// opened is what the process keeps open while it serves: the master key
// and its sealer, the store (and its replica), and object storage.
type opened struct {
	key    []byte
	sealer *seal.Sealer
	staff  string
	store  intake.Store
	lead   lead
	rep    *replica.Replicator
	blobs  intake.Blobs
	spool  *blob.Dir
}

// open restores the embedded store first where it must, loads the master
// key, opens the store and checks the key against it, then object
// storage. On an error what it opened is closed.
func (c *ServeCmd) open(ctx context.Context, log *slog.Logger, w watches) (_ *opened, err error) {
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return nil, err
	}
	if err := c.restoreFirst(ctx, log); err != nil {
		return nil, err
	}
	o := &opened{}
	var created bool
	o.key, created, err = seal.LoadOrCreateKey(os.Getenv("INTAKE_MASTER_KEY"), filepath.Join(c.Data, "master.key"))
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	if created {
		log.Warn("generated a master key; back it up: sealed secrets cannot be opened without it", "path", filepath.Join(c.Data, "master.key"))
	}
	if o.sealer, err = seal.New(o.key); err != nil {
		return nil, err
	}
	if o.staff, err = c.staffToken(log); err != nil {
		return nil, err
	}
	if o.store, o.lead, o.rep, err = c.openStore(ctx, log, w.store); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			o.close(log)
		}
	}()
	// Before anything serves or claims work: with another key every
	// secret would fail to open.
	if err := o.sealer.CheckStore(ctx, o.store); err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	log.Info("master key matches the store", "fingerprint", o.sealer.Fingerprint())
	if o.blobs, o.spool, err = c.openBlobs(ctx, log, w.blobs, o.store); err != nil {
		return nil, err
	}
	return o, nil
}

// close closes the store, then the replica: what the store wrote last
// goes too.
func (o *opened) close(log *slog.Logger) {
	o.store.Close()
	if o.rep != nil {
		if err := o.rep.Close(context.Background()); err != nil {
			log.Error("replica: the last commits may not have reached the replica", "err", err)
		}
	}
}

// process is intake wired over what it opened: the handlers to serve and
// the loops to run, none of them started.
type process struct {
	in       *ingress.Handler
	admin    *api.Server
	rt       *router.Router
	learner  *catalog.Learner
	loops    []Loop
	mux      *http.ServeMux // webhooks, the API, the console
	metrics  *http.ServeMux // mux itself, or one of its own with --metrics-addr
	draining atomic.Bool
	closers  []func()
}

func (p *process) close() {
	for _, f := range slices.Backward(p.closers) {
		f()
	}
}

// wire builds the parts of the process over o: metrics, ingress, the
// rules engine, the sender, the control plane and its transports, the
// worker and the router with the one Judger between them, and the loops.
func (c *ServeCmd) wire(ctx context.Context, log *slog.Logger, set settings, o *opened) (_ *process, err error) {
	p := &process{}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	store, sealer, rep := o.store, o.sealer, o.rep
	m := metrics.NewWith(metrics.Options{PerConsumer: c.MetricsByConsumer})
	if rep != nil {
		m.WatchReplication(func() metrics.Replication {
			st := rep.Status()
			return metrics.Replication{Lag: st.Lag, LastSync: st.LastSync, Errors: st.Errors}
		})
	}
	m.Registry.MustRegister(currentBuild().collector())
	clock := c.clock
	m.WatchStore(store, clock)
	quota := &ingress.Quota{Limit: c.StorageQuota}
	if o.spool != nil {
		quota.Spooled = o.spool.Bytes
	}
	m.WatchQuota(quota.Used, quota.Limit)
	// Fresh messages go from their commit straight to this process's
	// worker while it has room: as many as it processes at once.
	messages := handoff.NewMessages(c.Workers, c.Lease)
	// Under a burst, processing yields to the requests waiting for commits.
	var ingestFirst *pressure.Gauge
	if c.IngestFirst > 0 {
		ingestFirst = pressure.New(c.IngestFirst)
		m.WatchPressure(ingestFirst)
	}
	var ackReplica ingress.Replica
	var callReplica router.Replica
	if c.ReplicateSync {
		ackReplica, callReplica = rep, rep
		log.Info("acknowledging webhooks once their commits are in the replica (--replicate-sync)")
	}
	p.in = ingress.New(ingress.Config{Replica: ackReplica, Store: store, Sealer: sealer, PublicURL: c.publicURL(), Clock: clock, Metrics: m,
		Logger: log, Quota: quota, Handoff: messages, Pressure: ingestFirst, Blobs: o.blobs, BlobThreshold: c.BlobThreshold,
		MaxBodyBytes: c.MaxBodyBytes, BodyMemory: set.bodyMemory, StoreWait: c.StoreWait})
	log.Info("request bodies bounded", "max_body_bytes", c.MaxBodyBytes, "body_memory_bytes", c.BodyMemory)
	// One rules engine: its script hosts and compiled programs serve the
	// worker, the router and the control plane's checks and dry runs.
	engine, err := rules.New(rules.Config{ScriptTimeout: c.ScriptTimeout, ScriptMemory: c.ScriptMemory, Hosts: c.ScriptHosts}, clock)
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, engine.Close)
	// One sender delivers to consumers, keeping a connection per consumer
	// that is a broker; the control plane's test deliveries use it too.
	// The brokers' clients are linked here, never by the control plane.
	brokers := broker.All()
	sender := delivery.NewSender(delivery.Options{Timeout: c.DeliveryTimeout, Policy: set.policy, UserAgent: "intake", Brokers: brokers})
	p.closers = append(p.closers, func() { sender.Close() })
	// The one control plane: the API and the console are transports over it.
	ctl := control.New(control.Config{Store: store, Sealer: sealer, StaffToken: o.staff, PublicURL: c.publicURL(),
		Clock: clock, ConsumerPolicy: set.policy, Brokers: brokers, Rules: engine, Sender: sender,
		MaxBodyRetention: c.BodyRetention, MaxRetention: c.Retention, People: set.people, Blobs: o.blobs,
		MaxBodyBytes: c.MaxBodyBytes, Reads: c.readBudget(), BulkMax: c.BulkMax, Logger: log,
		Calls: c.callBounds(), Replica: replicaState(rep)})
	// URLs an earlier version stored with their credentials in the clear
	// are sealed before anything serves them.
	sealed, err := ctl.SealStoredURLs(ctx)
	if err != nil {
		return nil, fmt.Errorf("seal stored urls: %w", err)
	}
	if sealed > 0 {
		log.Info("sealed the credentials of urls stored in the clear", "urls", sealed)
	}
	p.admin = api.New(api.Config{Control: ctl, Wakes: store, PublicURL: c.publicURL(),
		Clock: clock, BodyURLKey: derive(o.key, "body-url"), Logger: log})
	// One Judger decides who gets each event and holds the call slots: the
	// worker has it judge each message's fan-out before its settle, which
	// writes it with the events, and the calls that commit leases go to
	// the router through calls, to be made on the slots it held. The
	// router fans out the rest on its own claims, with the same Judger.
	calls := handoff.NewCalls()
	bodyURLs := bodyurl.Signer{Key: derive(o.key, "body-url"), PublicURL: c.publicURL()}
	judger := fanout.New(fanout.Config{Store: store, BodyURLs: bodyURLs, Clock: clock, Lease: c.DeliveryTimeout + c.Lease,
		MaxEvents: c.Calls, ConsumerShare: c.ConsumerCalls, Pressure: ingestFirst, Rules: engine, Metrics: m, Logger: log})
	p.rt = router.New(router.Config{Store: store, Sealer: sealer, Clock: clock, FanOut: judger, Calls: calls, Sender: sender,
		Backoff: intake.Backoff{Base: c.RetryBase, Jitter: 0.2, Max: 6 * time.Hour}, Lease: c.DeliveryTimeout + c.Lease,
		Replica: callReplica, Pressure: ingestFirst, Rules: engine, Metrics: m, Logger: log})
	// The event-type catalog learns from the events this process settles:
	// the worker hands them over, the learner's loop writes them.
	var observer worker.Observer
	if c.Catalog {
		p.learner = catalog.New(catalog.Config{Store: store, Clock: clock, TypesPerConnection: c.CatalogTypes, Logger: log})
		observer = p.learner
	}
	w := worker.New(worker.Config{Store: store, Sealer: sealer, PublicURL: c.publicURL(), Clock: clock, Concurrency: c.Workers, Lease: c.Lease,
		Handoff: messages, FanOut: judger, Calls: calls, Catalog: observer, Pressure: ingestFirst,
		Backoff: intake.Backoff{Base: c.RetryBase, Jitter: 0.2, Max: 6 * time.Hour}, Rules: engine, Metrics: m, Logger: log,
		Blobs: o.blobs, BodyMemory: set.bodyMemory, Events: &fair.Rates{What: "events", Every: c.OrgEventsPerSec, Burst: c.OrgEventsBurst}})

	c.routes(log, set, o, p, ctl, m)

	// Window replays and bulk jobs recorded by any process's API or
	// console; claims spread them over the processes, jobs take turns, and
	// a stopped one's are taken over.
	// The sweeper and the notifier run on one process at a time.
	p.loops = []Loop{w, p.rt,
		&ingress.QuotaWatch{Quota: quota, Store: store, Every: 5 * time.Second, Logger: log},
		ctl.Runner(log),
		leading{job: "sweeper", lead: o.lead, loop: sweeper.New(sweeper.Config{Store: store, Clock: clock,
			BodyRetention: c.BodyRetention, Retention: c.Retention, PerSecond: rate.Limit(c.RetentionRate), Logger: log})},
		leading{job: "backlog-watch", lead: o.lead, loop: sweeper.NewBacklogWatch(sweeper.BacklogConfig{Store: store, Clock: clock,
			Age: c.IssueBacklogAge, Logger: log})},
		leading{job: "notifier", lead: o.lead, loop: notify.New(c.notifyConfig(store, sealer, clock, set.policy, m, log))},
	}
	if p.learner != nil {
		// Every process learns from its own events (counts add up, schemas
		// merge over the version read): no leader.
		p.loops = append(p.loops, p.learner)
	}
	if o.blobs != nil {
		var sweepReplica sweeper.Replica
		if rep != nil {
			sweepReplica = rep
		}
		// With a replica, objects stay as long as a restore may name them.
		p.loops = append(p.loops, leading{job: "blob-sweeper", lead: o.lead, loop: sweeper.NewBlobs(sweeper.BlobsConfig{Store: store,
			Blobs: o.blobs, Clock: clock, Logger: log, Metrics: m, Replica: sweepReplica, ReplicaRetention: c.ReplicateRetention})})
	}
	return p, nil
}

// routes gives the process its handlers: webhooks, the API, the console
// (with single sign-on when set), metrics, and the health checks.
func (c *ServeCmd) routes(log *slog.Logger, set settings, o *opened, p *process, ctl *control.Plane, m *metrics.Metrics) {
	clock := c.clock
	p.mux = http.NewServeMux()
	p.mux.Handle("/webhooks/{token}", p.in)
	p.mux.Handle("/api/", p.admin.Handler())
	p.mux.Handle("/body/", p.admin.Handler())
	sso := set.sso
	if sso.Issuer != "" {
		// Every process signs the sign-in's cookie alike, so any of them
		// may take the provider's answer.
		sso.Key = derive(o.key, "console-oidc")
		log.Info("console single sign-on", "issuer", sso.Issuer, "client_id", sso.ClientID, "claim", sso.Claim,
			"groups_mapped", len(set.people), "redirect_url", cmp.Or(sso.RedirectURL, "the console's address + /console/login/oidc/callback"))
	}
	p.mux.Handle("/console/", console.New(console.Config{Control: ctl, PublicURL: c.publicURL(),
		Clock: clock, SingleSignOn: sso, Logger: log}).Handler())
	p.metrics = p.mux
	if c.MetricsAddr != "" {
		p.metrics = http.NewServeMux()
	}
	p.metrics.Handle("GET /metrics", c.metricsHandler(m, clock, log))
	// A person who opens the bare address wants the console.
	p.mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	p.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	var status replicaStatus
	if o.rep != nil {
		status = o.rep
	}
	p.mux.Handle("GET /readyz", ready(o.store, &p.draining, status))
}

// serve listens, runs the loops and serves until ctx ends (SIGTERM,
// SIGINT), then drains; or until the server fails.
func (c *ServeCmd) serve(ctx context.Context, log *slog.Logger, p *process) error {
	srv := &http.Server{
		Handler:           p.mux,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	// Metrics on an address of their own, e.g. one only the scraper
	// reaches: the main address, open to providers, no longer serves them.
	if c.MetricsAddr != "" {
		mln, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("metrics address: %w", err)
		}
		metricsSrv := &http.Server{Handler: p.metrics, ReadHeaderTimeout: c.ReadHeaderTimeout, WriteTimeout: 60 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		defer metricsSrv.Close()
		go func() {
			if err := metricsSrv.Serve(mln); err != nil && err != http.ErrServerClosed {
				log.Error("metrics server stopped", "err", err)
			}
		}()
		log.Info("metrics serving", "addr", mln.Addr().String())
	}
	log.Info("intake serving", "addr", ln.Addr().String(), "data", c.Data, "public_url", c.publicURL(),
		"console", c.consoleURL(ln.Addr()))

	workCtx, stopWork := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, l := range p.loops {
		wg.Go(func() {
			if err := l.Run(workCtx); err != nil {
				log.Error("background loop stopped", "loop", fmt.Sprintf("%T", l), "err", err)
			}
		})
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	stopLoops := func() {
		stopWork()
		wg.Wait()
	}
	select {
	case err := <-serveErr:
		stopLoops()
		return err
	case <-ctx.Done():
	}
	c.drain(log, srv, p, stopLoops)
	return nil
}

// drain stops the process on SIGTERM: new webhooks are refused while
// in-flight requests get --shutdown-grace, then the loops stop, the router
// makes the calls of the settles that finished on the way out, and the
// catalog records its last counts.
func (c *ServeCmd) drain(log *slog.Logger, srv *http.Server, p *process, stopLoops func()) {
	log.Info("draining: refusing new webhooks, finishing in-flight commits")
	p.draining.Store(true)
	p.in.Drain()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), c.ShutdownGrace)
	defer cancel()
	srv.RegisterOnShutdown(p.admin.CloseStreams)
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown: requests still open at the deadline", "err", err)
	}
	stopLoops()
	p.rt.Wait()
	if p.learner != nil {
		// What the worker settled while the loops stopped.
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.learner.Flush(fctx); err != nil {
			log.Warn("catalog: the last counts could not be recorded", "err", err)
		}
		cancel()
	}
	log.Info("stopped")
}

// replicaStatus is how the replica stands (replica.Replicator).
type replicaStatus interface{ Status() replica.Status }

// replicaState gives the control plane how rep stands; nil without one.
func replicaState(rep *replica.Replicator) func() intake.ReplicaState {
	if rep == nil {
		return nil
	}
	return func() intake.ReplicaState {
		st := rep.Status()
		out := intake.ReplicaState{Lag: st.Lag, LastSync: st.LastSync, Errors: st.Errors}
		if st.Err != nil {
			out.Failing = st.Err.Error()
		}
		return out
	}
}

// ready answers /readyz: 503 while draining or while the store does not
// answer. With --replicate it tells how the replica stands: its lag, and
// that it cannot be reached, while ingress goes on acknowledging.
func ready(store interface{ Ping(context.Context) error }, draining *atomic.Bool, rep replicaStatus) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		pctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := store.Ping(pctx); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
		if rep == nil {
			return
		}
		st := rep.Status()
		last := "none yet"
		if !st.LastSync.IsZero() {
			last = st.LastSync.UTC().Format(time.RFC3339)
		}
		if st.Err != nil {
			fmt.Fprintf(w, "replica unreachable: lag %s, last sync %s, %d failed syncs: %v\n", st.Lag.Round(time.Millisecond), last, st.Errors, st.Err)
			return
		}
		fmt.Fprintf(w, "replica: lag %s, last sync %s, %d failed syncs\n", st.Lag.Round(time.Millisecond), last, st.Errors)
	})
}

// metricsHandler serves /metrics from a render at most a second old, to
// those with --metrics-token when it is set.
func (c *ServeCmd) metricsHandler(m *metrics.Metrics, clock intake.Clock, log *slog.Logger) http.Handler {
	return m.Handler(metrics.HandlerOptions{Clock: clock, Token: c.MetricsToken,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
}

// openBlobs opens the blob store --blob-store names and creates its bucket
// if it is missing. Object storage that cannot be reached now is no reason
// not to serve: small bodies do not need it, and large ones are refused
// (503) until it is back. Without --blob-store, the embedded store spools
// large bodies to files beside it (DESIGN §26: never whole into memory
// nor into the database); on PostgreSQL they stay in the database (nil),
// since another process could not read a file this one wrote. The blob
// store --blob-store names reports its outages to watch. With --replicate
// the place is store's (bodyLocation).
func (c *ServeCmd) openBlobs(ctx context.Context, log *slog.Logger, watch *outage.Watch, store intake.Store) (intake.Blobs, *blob.Dir, error) {
	if c.BlobThreshold < 1 {
		return nil, nil, fmt.Errorf("--blob-threshold must be at least 1 byte")
	}
	blobURL, err := c.bodyLocation(ctx, log, store)
	if err != nil {
		return nil, nil, err
	}
	if blobURL == "" {
		if c.DB != "" {
			return nil, nil, nil
		}
		d, err := blob.OpenDir(filepath.Join(c.Data, "bodies"))
		if err != nil {
			return nil, nil, err
		}
		log.Info("large bodies spool to files beside the store", "dir", filepath.Join(c.Data, "bodies"), "threshold_bytes", c.BlobThreshold)
		return d, d, nil
	}
	b, err := blob.OpenURL(ctx, blobURL)
	if err != nil {
		return nil, nil, err
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.EnsureBucket(bctx); err != nil {
		log.Warn("object storage unreachable: bodies above the threshold are refused (503) until it is back", "err", err)
	}
	log.Info("large bodies go to the blob store", "threshold_bytes", c.BlobThreshold, "beside_the_replica", blobURL == c.blobURL() && c.BlobStore == "")
	d, _ := b.(*blob.Dir)
	return blob.Watched(b, watch), d, nil
}

// blobURL is where the flags put bodies above the blob threshold:
// --blob-store; else, with --replicate, bodies/ under the replica's path,
// so that they survive the machine with the store that names them (its
// spool under --data would not); else "": the spool.
func (c *ServeCmd) blobURL() string {
	if c.BlobStore != "" || c.Replicate == "" {
		return c.BlobStore
	}
	return bodiesBeside(c.Replicate)
}

// bodiesBeside is bodies/ under the path of the replica at u.
func bodiesBeside(u string) string {
	base, query, ok := strings.Cut(u, "?")
	b := strings.TrimRight(base, "/") + "/bodies"
	if ok {
		b += "?" + query
	}
	return b
}

// bodyRecord is the embedded store's record of where its large bodies are
// kept (sqlite.Store.BodyLocation).
type bodyRecord interface {
	BodyLocation(ctx context.Context) (string, error)
	RecordBodyLocation(ctx context.Context, u string) error
}

// bodyLocation is where store's bodies above the blob threshold go:
// blobURL, except that with --replicate and no --blob-store the place the
// store recorded wins. A replicated store records where its large bodies
// go, and the record goes with it into the replica: a store restored to
// an earlier time must replicate to a new place (its old one holds the
// later history), but its bodies stay where they were written, and it
// reads them, and puts new ones, there. An explicit --blob-store wins and
// is recorded: the operator moved the bodies.
func (c *ServeCmd) bodyLocation(ctx context.Context, log *slog.Logger, store intake.Store) (string, error) {
	u := c.blobURL()
	// --replicate is for the embedded store, which keeps the record.
	rec, ok := store.(bodyRecord)
	if c.Replicate == "" || !ok {
		return u, nil
	}
	held, err := rec.BodyLocation(ctx)
	if err != nil {
		return "", fmt.Errorf("read where the store keeps its large bodies: %w", err)
	}
	switch {
	case held == "" || held == u:
	case c.BlobStore != "":
		log.Info("large bodies go to --blob-store, no longer where the store kept them", "blob_store", replica.Redact(u), "was", replica.Redact(held))
	default:
		log.Info("large bodies stay where the store keeps them, not beside its new replica (--blob-store names another place)",
			"blob_store", replica.Redact(held), "replica", replica.Redact(c.Replicate))
		u = held
	}
	if u != held {
		if err := rec.RecordBodyLocation(ctx, u); err != nil {
			return "", fmt.Errorf("record where the store keeps its large bodies: %w", err)
		}
	}
	return u, nil
}

// restoreFirst rebuilds the store from --replicate's replica when the
// data directory holds none, so a new machine carries on where the lost
// one stopped; an empty replica starts a fresh store. The master key is
// not in the replica: a store restored without one is not given a new
// key, which could not open its secrets.
func (c *ServeCmd) restoreFirst(ctx context.Context, log *slog.Logger) error {
	path := filepath.Join(c.Data, "intake.db")
	if c.Replicate == "" || holdsStore(path) {
		return nil
	}
	_, err := restoreStore(ctx, c.Replicate, path, time.Time{}, log)
	if errors.Is(err, errEmptyReplica) {
		log.Info("the data directory holds no store and the replica none: starting a fresh store", "replica", replica.Redact(c.Replicate))
		return nil
	}
	if err != nil {
		return fmt.Errorf("--replicate: the data directory holds no store, and restoring it failed: %w", err)
	}
	log.Info("the data directory held no store: restored it from the replica", "replica", replica.Redact(c.Replicate), "path", path)
	if _, err := os.Stat(filepath.Join(c.Data, "master.key")); err != nil && os.Getenv("INTAKE_MASTER_KEY") == "" {
		return fmt.Errorf("--replicate: restored the store from the replica, but the master key is not in it: put the lost machine's master.key into %s, or set INTAKE_MASTER_KEY, and start again (a new key could not open the store's sealed secrets)", c.Data)
	}
	return nil
}

// checkReplicate refuses a --replicate that could not work, before
// anything starts.
func (c *ServeCmd) checkReplicate() error {
	if c.Replicate == "" {
		if c.ReplicateSync {
			return errors.New("--replicate-sync needs --replicate: the replica an acknowledgement waits for")
		}
		return nil
	}
	if c.DB != "" {
		return errors.New("--replicate is for the embedded store: on PostgreSQL (--db) use PostgreSQL's own replication and backups")
	}
	if err := replica.Check(c.Replicate); err != nil {
		return fmt.Errorf("--replicate %w", err)
	}
	switch {
	case c.ReplicateInterval <= 0 || c.ReplicateInterval > time.Minute:
		return fmt.Errorf("--replicate-interval %s: want more than 0 and at most 1m", c.ReplicateInterval)
	case c.ReplicateSnapshots < time.Minute:
		return fmt.Errorf("--replicate-snapshot-interval %s: want at least 1m", c.ReplicateSnapshots)
	case c.ReplicateRetention < c.ReplicateSnapshots:
		return fmt.Errorf("--replicate-retention %s: want at least --replicate-snapshot-interval (%s), or a restore could find no snapshot", c.ReplicateRetention, c.ReplicateSnapshots)
	}
	return nil
}

// spools reports whether bodies above the blob threshold stay out of the
// database: with --blob-store, or in the embedded store's spool.
func (c *ServeCmd) spools() bool { return c.BlobStore != "" || c.DB == "" }

// maxDatabaseBody is the largest body PostgreSQL keeps in the database
// (without --blob-store): the default --max-body-bytes.
const maxDatabaseBody = 10 << 20

// bodyMemory checks --max-body-bytes and --body-memory, and returns the
// budget the bodies held in memory share: being read at ingress, and read
// back from the blob store while their messages are processed.
func (c *ServeCmd) bodyMemory() (*fair.Budget, error) {
	if c.MaxBodyBytes < 1 || c.MaxBodyBytes > intake.MaxBlobBodyBytes {
		return nil, fmt.Errorf("--max-body-bytes must be between 1 and %d (100 MiB)", intake.MaxBlobBodyBytes)
	}
	if !c.spools() && c.MaxBodyBytes > maxDatabaseBody {
		return nil, fmt.Errorf("--max-body-bytes above %d (10 MiB) needs --blob-store on PostgreSQL: a body the database keeps is held whole, several times over, as it is stored, handed to the worker and claimed, so larger bodies stream to object storage", maxDatabaseBody)
	}
	// The most one body is charged: at ingress a body above the blob
	// threshold holds only its first part, but its processing holds it
	// worker.BodyCharge times over.
	one := c.MaxBodyBytes + 1
	if c.spools() {
		one = max(min(one, c.BlobThreshold+1), worker.BodyCharge*c.MaxBodyBytes)
	}
	// One org alone may hold its share of the budget: one body must fit.
	least := max(1, one+one/3-3)
	for fair.Share(least, 0) < one {
		least++
	}
	if c.BodyMemory < least {
		return nil, fmt.Errorf("--body-memory must be at least %d bytes with --max-body-bytes %d: an org alone holds at most three quarters of it, and one body (%d bytes, a body's processing holding it %d times over) must fit in that", least, c.MaxBodyBytes, one, worker.BodyCharge)
	}
	return &fair.Budget{What: "body memory", Total: c.BodyMemory, Wait: time.Second}, nil
}

// consumerPolicy is the address policy of consumer and notification URLs:
// the default one, tightened by --consumer-deny and --consumer-allow.
func (c *ServeCmd) consumerPolicy() (delivery.Policy, error) {
	deny, err := delivery.ParseRanges("--consumer-deny", c.ConsumerDeny)
	if err != nil {
		return delivery.Policy{}, err
	}
	allow, err := delivery.ParseRanges("--consumer-allow", c.ConsumerAllow)
	if err != nil {
		return delivery.Policy{}, err
	}
	return delivery.DefaultPolicy().Tighten(deny, allow), nil
}

// singleSignOn is the console's OpenID Connect client and the people map,
// from the --oidc-… flags; no issuer: none. A half-made setup is refused
// at start, not at someone's first sign-in.
func (c *ServeCmd) singleSignOn() (console.SingleSignOn, intake.PeopleMap, error) {
	if c.OIDCIssuer == "" {
		if c.OIDCClientID != "" || c.OIDCClientSecret != "" || len(c.OIDCMap) > 0 {
			return console.SingleSignOn{}, nil, errors.New("--oidc-client-id, --oidc-client-secret and --oidc-map need --oidc-issuer")
		}
		return console.SingleSignOn{}, nil, nil
	}
	if u, err := url.Parse(c.OIDCIssuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return console.SingleSignOn{}, nil, fmt.Errorf("--oidc-issuer %q: want the issuer's http(s) URL", c.OIDCIssuer)
	}
	if c.OIDCClientID == "" {
		return console.SingleSignOn{}, nil, errors.New("--oidc-client-id is required with --oidc-issuer")
	}
	if len(c.OIDCMap) == 0 {
		return console.SingleSignOn{}, nil, errors.New("--oidc-map is required with --oidc-issuer: without it nobody may sign in")
	}
	people, err := parsePeopleMap(c.OIDCMap)
	if err != nil {
		return console.SingleSignOn{}, nil, errors.New(intake.ErrorMessage(err))
	}
	sso := console.SingleSignOn{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, ClientSecret: c.OIDCClientSecret,
		Claim: c.OIDCClaim, Scopes: c.OIDCScope}
	if c.PublicURL != "" {
		sso.RedirectURL = c.publicURL() + "/console/login/oidc/callback"
	}
	return sso, people, nil
}

// lead runs a maintenance job (fn) so that one process at a time does, for
// as long as its context lasts.
type lead func(ctx context.Context, job string, fn func(context.Context))

// leading is a loop that runs on one process at a time.
type leading struct {
	job  string
	lead lead
	loop Loop
}

func (l leading) Run(ctx context.Context) error {
	var err error
	l.lead(ctx, l.job, func(ctx context.Context) { err = l.loop.Run(ctx) })
	return err
}

// openStore opens PostgreSQL when --db names it, else the embedded store
// under --data, replicated with --replicate (rep: nil without). On
// PostgreSQL, where several processes share the database, maintenance
// jobs run under an advisory lock; SQLite has one process.
func (c *ServeCmd) openStore(ctx context.Context, log *slog.Logger, watch *outage.Watch) (_ intake.Store, _ lead, rep *replica.Replicator, _ error) {
	if c.DB == "" {
		path := filepath.Join(c.Data, "intake.db")
		s, err := sqlite.Open(ctx, sqlite.Options{Path: path, OperatorReaders: c.Reads, Replicated: c.Replicate != ""})
		if err != nil {
			return nil, nil, nil, err
		}
		if c.Replicate != "" {
			id, err := s.ID(ctx)
			if err == nil {
				rep, err = replica.Start(ctx, replica.Options{URL: c.Replicate, Path: path, StoreID: id, Clock: c.clock, Logger: log,
					Every: c.ReplicateInterval, SnapshotInterval: c.ReplicateSnapshots, Retention: c.ReplicateRetention})
			}
			if err != nil {
				s.Close()
				return nil, nil, nil, fmt.Errorf("--replicate %w", err)
			}
			log.Info("the store is replicated", "replica", replica.Redact(c.Replicate))
		}
		return s, func(ctx context.Context, _ string, fn func(context.Context)) { fn(ctx) }, rep, nil
	}
	u, err := url.Parse(c.DB)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, nil, nil, errors.New("--db: want a postgres:// URL")
	}
	log.Info("opening the PostgreSQL store; migrating it if needed", "db", redact.URL(c.DB))
	s, err := postgres.Open(ctx, postgres.Options{URL: c.DB, Logger: log, Outage: watch, CommitWait: c.StoreWait,
		ReadConns: int32(c.Reads), ReadTimeout: c.ReadDeadline + time.Second,
		// A transaction left idle by a process frozen past its leases ends
		// with them, so the rows it locked are taken over with its work.
		IdleInTransaction: max(c.Lease, 5*time.Second)})
	if err != nil {
		return nil, nil, nil, err
	}
	return s, func(ctx context.Context, job string, fn func(context.Context)) { s.Lead(ctx, job, 15*time.Second, fn) }, nil, nil
}

func (c *ServeCmd) logger() *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// staffToken returns INTAKE_ADMIN_TOKEN, or the one in <data>/admin-token,
// generating it on first start. The token itself is never logged.
func (c *ServeCmd) staffToken(log *slog.Logger) (string, error) {
	if t := os.Getenv("INTAKE_ADMIN_TOKEN"); t != "" {
		return t, nil
	}
	path := filepath.Join(c.Data, "admin-token")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	t := token.New("ist_")
	if err := seal.WriteSecretFile(path, t+"\n"); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	log.Info("generated the staff token", "path", path)
	return t, nil
}

func (c *ServeCmd) publicURL() string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	addr := c.Addr
	if strings.HasPrefix(addr, ":") {
		addr = "localhost" + addr
	}
	return "http://" + addr
}

// consoleURL is where a person opens the console: under the public URL when
// one is set, else on the address actually listened on (so --addr :0 names
// its port, and a wildcard host reads as localhost).
func (c *ServeCmd) consoleURL(addr net.Addr) string {
	if c.PublicURL != "" {
		return c.publicURL() + "/console/"
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return c.publicURL() + "/console/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/console/"
}

// derive makes a purpose-bound key from the master key, so the body-URL
// signer never holds the key that seals secrets.
func derive(master []byte, purpose string) []byte {
	h := hmac.New(sha256.New, master)
	h.Write([]byte("intake:" + purpose))
	return h.Sum(nil)
}

// callBounds bound what operators drive that calls out or holds a
// response open: consumer tests and raw body reads.
func (c *ServeCmd) callBounds() control.CallBounds {
	return control.CallBounds{TestsPerOrg: c.ConsumerTestsPerOrg, Tests: c.ConsumerTests, TestsPerSecond: c.ConsumerTestsPerSec,
		TestsBurst: c.ConsumerTestsBurst, BodyReadsPerOrg: c.BodyReadsPerOrg, BodyReads: c.BodyReads}
}

// notifyConfig is the notifier's: its calls go through the consumer
// address policy, as many in flight as --notify-calls allows, each org's
// receivers at most --notify-calls-per-org.
func (c *ServeCmd) notifyConfig(store intake.Notifications, sealer *seal.Sealer, clock intake.Clock, policy delivery.Policy,
	m *metrics.Metrics, log *slog.Logger) notify.Config {
	return notify.Config{Store: store, Sealer: sealer, Clock: clock,
		Sender:   delivery.NewSender(delivery.Options{Timeout: c.DeliveryTimeout, Policy: policy, UserAgent: "intake"}),
		Interval: c.NotifyInterval, MaxInFlight: c.NotifyCalls, MaxInFlightPerOrg: c.NotifyCallsPerOrg, Metrics: m, Logger: log}
}

// readBudget is the bound on operators' reads. PostgreSQL's read pool
// stops a statement a second after the deadline, should the cancel that
// ends a read at its deadline not reach the server.
func (c *ServeCmd) readBudget() control.ReadBudget {
	return control.ReadBudget{Deadline: c.ReadDeadline, PerOrg: c.ReadsPerOrg, Total: c.Reads, Wait: time.Second}
}
