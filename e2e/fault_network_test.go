package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/faults"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// campaign is the fault campaign's size and settings: small for CI, or,
// with INTAKE_FAULTS_FULL=1, the full size docs/reliability.md's table
// comes from.
type campaign struct {
	clients       int
	during        time.Duration
	before, after int
	// clientTimeout is how long the provider waits for an answer; the
	// store wait is below it.
	clientTimeout, storeWait time.Duration
	// breakerFailures, when set, is the consumer's: raised in CI so a few
	// seconds of a fault do not open the breaker, whose first probe comes
	// 30 s later.
	breakerFailures int
	// retryBase, when set, is the consumer's: with breakerFailures, what
	// keeps the calls failing through a fault below the breaker's count.
	retryBase string
}

func faultCampaign() campaign {
	if os.Getenv("INTAKE_FAULTS_FULL") == "1" {
		return campaign{clients: 16, during: 10 * time.Second, before: 200, after: 100,
			clientTimeout: 10 * time.Second, storeWait: 5 * time.Second} // GitHub's timeout; the defaults
	}
	return campaign{clients: 4, during: 3 * time.Second, before: 20, after: 10,
		clientTimeout: 2 * time.Second, storeWait: time.Second, breakerFailures: 1000, retryBase: "1s"}
}

// linkFaults are the campaign's faults run on the link to a broker and to
// object storage: the baseline, added latency, resets, a link that drops
// everything, and a partition both ways and one way (the other end acts on
// what it is sent, its answers are held).
var linkFaults = []string{"none", "latency 200ms", "reset_peer", "timeout both ways", "partition both ways",
	"partition one way (answers held)"}

// faultWait bounds each wait after a fault.
const faultWait = 60 * time.Second

// TestNetworkFaultsBetweenIntakeAndPostgreSQLLoseNothing runs each network
// fault of the campaign between intake and PostgreSQL (toxiproxy on the
// link): webhooks posted while it is on are acknowledged or answered 503,
// never 500; none acknowledged is lost; none reaches the consumer twice;
// and ingress acknowledges again once the fault is removed.
func TestNetworkFaultsBetweenIntakeAndPostgreSQLLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	if !onPostgres() {
		t.Skip("the link to PostgreSQL: with INTAKE_E2E_STORE=postgres")
	}
	for _, f := range faults.Network {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			db, proxy := faults.ProxiedURL(t, pgtest.Database(t))
			app, consumer := appConsumer(t, deliveryOf)
			s := start(t, t.TempDir(), "--db", db, "--store-wait", faultCampaign().storeWait.String())
			tally := runFault(t, s, f, proxy, app.Sink, app, consumer.URL)
			checkTally(t, tally, "postgres link", "postgres")
			s.kill()
			checkOutageLogged(t, s)
		})
	}
}

// TestNetworkFaultsBetweenIntakeAndAConsumerLoseNothing runs each network
// fault of the campaign between intake and an HTTP consumer, on the store
// the suite runs on: every acknowledged webhook reaches the consumer once
// the fault is removed, as one event (a call repeated after its answer was
// lost carries the same webhook-id, for the consumer to dedupe).
func TestNetworkFaultsBetweenIntakeAndAConsumerLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	store := "sqlite"
	if onPostgres() {
		store = "postgres"
	}
	for _, f := range faults.Network {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			app, consumer := appConsumer(t, deliveryOf)
			consumerURL, proxy := faults.ProxiedURL(t, consumer.URL+"/hooks")
			s := start(t, t.TempDir(), "--delivery-timeout", "2s")
			tally := runFault(t, s, f, proxy, app.Sink, app, consumerURL)
			checkTally(t, tally, "consumer link", store)
		})
	}
}

// appConsumer starts the campaign's HTTP consumer: an application on
// package inbox, over a SQLite database of its own, whose calls its Sink
// records by key.
func appConsumer(t *testing.T, key func([]byte) string) (*faults.App, *httptest.Server) {
	t.Helper()
	app, err := faults.NewApp(t.TempDir(), &faults.Sink{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	consumer := httptest.NewServer(app)
	t.Cleanup(func() { consumer.Close(); app.Close() })
	return app, consumer
}

// runFault sets up a GitHub endpoint and a consumer at consumerURL on s,
// and runs f at the campaign's size. The calls reach sink; app, when not
// nil, is the consumer, given the consumer's signing secret.
func runFault(t *testing.T, s *server, f faults.Fault, proxy *faults.Proxy, sink *faults.Sink, app *faults.App, consumerURL string) faults.Tally {
	t.Helper()
	return runFaultPosting(t, s, f, proxy, sink, app, consumerURL, setupGitHub(t, s), githubDelivery)
}

// runFaultPosting is runFault with the endpoint at path set up already,
// each webhook posted as request makes it.
func runFaultPosting(t *testing.T, s *server, f faults.Fault, proxy *faults.Proxy, sink *faults.Sink, app *faults.App,
	consumerURL, path string, request func(url, id string) *http.Request) faults.Tally {
	t.Helper()
	size := faultCampaign()
	id, secret := addConsumer(t, s, firstOrgID(t, s), "sink", consumerURL)
	if app != nil {
		if err := app.Trust(secret); err != nil {
			t.Fatal(err)
		}
	}
	if size.breakerFailures > 0 {
		s.api(t, "PATCH", "/api/v1/consumers/"+id, map[string]any{"breaker_failures": size.breakerFailures,
			"retry": map[string]any{"base": size.retryBase}}, nil)
	}
	client := &http.Client{Timeout: size.clientTimeout}
	run := faults.Run{
		Post: func(ctx context.Context, id string) (int, error) {
			resp, err := client.Do(request(s.url+path, id).WithContext(ctx))
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		},
		Key:   func(id string) string { return id },
		Proxy: proxy, Sink: sink, App: app,
		Clients: size.clients, During: size.during, Before: size.before, After: size.after,
		Deadline: faultWait,
		Quiet: func(ctx context.Context) error {
			eventually(t, faultWait, "every event delivered", func() bool { return s.allDelivered(t) })
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*faultWait)
	defer cancel()
	tally, err := run.Do(ctx, f)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.logs)
	}
	return tally
}

// checkTally fails the test on a lost webhook, a duplicate effect or an
// answer other than 2xx and 503, and logs the tally as a table row.
func checkTally(t *testing.T, tally faults.Tally, link, store string) {
	t.Helper()
	t.Logf("\n%s\n%s", faults.Header, tally.Row(link, store))
	if tally.Lost > 0 {
		t.Errorf("%d acknowledged webhooks never reached the consumer", tally.Lost)
	}
	if tally.Twice > 0 {
		t.Errorf("%d webhooks reached the consumer as more than one event", tally.Twice)
	}
	if tally.AppliedTwice > 0 || tally.Unapplied > 0 {
		t.Errorf("the application on package inbox applied %d acknowledged webhooks twice and %d never", tally.AppliedTwice, tally.Unapplied)
	}
	if bad := tally.Bad(); len(bad) > 0 {
		t.Errorf("while the fault was on ingress answered %v: a webhook not made durable is answered 503", bad)
	}
	if tally.Unanswered > 0 {
		t.Errorf("%d webhooks posted while the fault was on got no answer within the provider's timeout: one not made durable is answered 503", tally.Unanswered)
	}
	if tally.Acked != tally.Posted {
		t.Errorf("%d of %d webhooks acknowledged, retries included", tally.Acked, tally.Posted)
	}
}

// deliveryOf is the GitHub delivery id in a consumer call's envelope.
func deliveryOf(body []byte) string {
	var env struct {
		Data struct{ Delivery string } `json:"data"`
	}
	json.Unmarshal(body, &env)
	return env.Data.Delivery
}

// checkOutageLogged fails the test when a warning or an error was logged
// more than once per outage (of PostgreSQL, of object storage): an outage
// is logged when it begins and ends, and what fails because of it once
// per kind between.
func checkOutageLogged(t *testing.T, s *server) {
	t.Helper()
	outages, lines := 0, map[string]int{}
	total, tail := 0, 0
	for line := range strings.Lines(s.logs.String()) {
		var rec struct {
			Level, Msg  string
			AfterOutage string `json:"after_outage"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if rec.AfterOutage != "" {
			tail++
		}
		if rec.Level != "WARN" && rec.Level != "ERROR" {
			continue
		}
		total++
		if strings.Contains(rec.Msg, ": unreachable; what fails because of it is logged once per kind") {
			outages++
			continue
		}
		lines[rec.Msg]++
	}
	t.Logf("%d warnings and errors logged, %d outages, %d failures told after an outage as its tail (info)", total, outages, tail)
	for msg, n := range lines {
		if n > max(1, outages) {
			t.Errorf("logged %d times over %d outages: %s", n, outages, msg)
		}
	}
}
