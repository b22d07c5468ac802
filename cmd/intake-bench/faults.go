package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/intakehq/intake/internal/faults"
)

// The fault campaign at full size (docs/reliability.md): 16 clients post
// for 10 s while the fault is on, each waiting 10 s for an answer as GitHub
// does; intake runs as the end-to-end tests start it (--retry-base 50ms,
// --lease 2s), with its default --store-wait (5 s).
const (
	faultClients       = 16
	faultDuring        = 10 * time.Second
	faultBefore        = 200
	faultAfter         = 100
	faultClientTimeout = 10 * time.Second
	faultWait          = 60 * time.Second
)

// faultLink is a link the campaign puts its faults on, on one store.
type faultLink struct {
	link, store string
	db          string // the PostgreSQL server, "" for SQLite
	onStore     bool   // the fault is on the link to PostgreSQL, else on the consumer's
}

// FaultsReport is the campaign's table: a row per fault, link and store.
type FaultsReport struct {
	Rows   []faults.Tally `json:"rows"`
	Links  []string       `json:"links"`
	Stores []string       `json:"stores"`
	Failed []string       `json:"failed,omitempty"`
}

func (r *FaultsReport) writeText(w io.Writer) {
	fmt.Fprintln(w, faults.Header)
	for i, t := range r.Rows {
		fmt.Fprintln(w, t.Row(r.Links[i], r.Stores[i]))
	}
	for _, f := range r.Failed {
		fmt.Fprintln(w, "FAILED:", f)
	}
}

// faultsBench runs every network fault of the campaign on the link to an
// HTTP consumer on SQLite, and with --db on the link to PostgreSQL and on
// the consumer's link on PostgreSQL, each on a server of its own.
func faultsBench(ctx context.Context, o options, progress io.Writer) (*FaultsReport, error) {
	links := []faultLink{{link: "consumer link", store: "sqlite"}}
	if o.db != "" {
		links = []faultLink{{link: "postgres link", store: "postgres", db: o.db, onStore: true}, links[0],
			{link: "consumer link", store: "postgres", db: o.db}}
	}
	r := &FaultsReport{}
	for _, l := range links {
		for _, f := range faults.Network {
			if len(o.faultNames) > 0 && !o.faultNames[f.Name] {
				continue
			}
			fmt.Fprintf(progress, "%s, %s: %s\n", l.link, l.store, f.Name)
			t, err := runFaultOn(ctx, o, l, f)
			if err != nil {
				return r, fmt.Errorf("%s, %s, %s: %w", l.link, l.store, f.Name, err)
			}
			r.Rows, r.Links, r.Stores = append(r.Rows, t), append(r.Links, l.link), append(r.Stores, l.store)
			if why := faultFailure(t); why != "" {
				r.Failed = append(r.Failed, fmt.Sprintf("%s, %s, %s: %s", l.link, l.store, f.Name, why))
			}
			fmt.Fprintln(progress, t.Row(l.link, l.store))
		}
	}
	return r, nil
}

// runFaultOn starts a server with the fault's proxy on link l, sets up a
// GitHub endpoint and a consumer that is the checker's sink, and runs f.
func runFaultOn(ctx context.Context, o options, l faultLink, f faults.Fault) (faults.Tally, error) {
	env, dropDB, err := serverEnv(ctx, l.db, io.Discard)
	if err != nil {
		return faults.Tally{}, err
	}
	defer dropDB()
	appDir, err := os.MkdirTemp("", "intake-bench-app-")
	if err != nil {
		return faults.Tally{}, err
	}
	defer os.RemoveAll(appDir)
	app, err := faults.NewApp(appDir, &faults.Sink{Key: deliveryOf})
	if err != nil {
		return faults.Tally{}, err
	}
	defer app.Close()
	consumer := httptest.NewServer(app)
	defer consumer.Close()
	consumerURL := consumer.URL + "/hooks"
	upstream := consumer.Listener.Addr().String()
	if l.onStore {
		u, err := url.Parse(strings.TrimPrefix(env[0], "INTAKE_DB="))
		if err != nil {
			return faults.Tally{}, err
		}
		upstream = u.Host
	}
	proxy, err := faults.NewProxy(l.link, upstream)
	if err != nil {
		return faults.Tally{}, err
	}
	defer proxy.Close()
	if l.onStore {
		u, _ := url.Parse(strings.TrimPrefix(env[0], "INTAKE_DB="))
		u.Host = proxy.Addr
		env[0] = "INTAKE_DB=" + u.String()
	} else {
		consumerURL = "http://" + proxy.Addr + "/hooks"
		env = append(env, "INTAKE_DELIVERY_TIMEOUT=2s")
	}
	env = append(env, "INTAKE_RETRY_BASE=50ms", "INTAKE_LEASE=2s")
	tok := rand.Text()
	srv, err := spawn(o.intakeBin, tok, env...)
	if err != nil {
		return faults.Tally{}, err
	}
	defer srv.kill()
	a := &admin{base: srv.url, token: tok, http: &http.Client{Timeout: 30 * time.Second}}
	b, err := setUp(a, "github", 0)
	if err != nil {
		return faults.Tally{}, err
	}
	c, err := registerSigningConsumer(a, b, "sink", consumerURL, false)
	if err != nil {
		return faults.Tally{}, err
	}
	if err := app.Trust(c.SigningSecret); err != nil {
		return faults.Tally{}, err
	}
	client := &http.Client{Timeout: faultClientTimeout}
	run := faults.Run{
		Post: func(ctx context.Context, id string) (int, error) {
			body := fmt.Appendf(nil, `{"ref":"refs/heads/main","delivery":%q,"repository":{"node_id":"R_1"}}`, id)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.url+"/webhooks/"+b.token, bytes.NewReader(body))
			if err != nil {
				return 0, err
			}
			req.Header.Set("Content-Type", "application/json")
			b.sign(req.Header, id, body)
			resp, err := client.Do(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		},
		Key:   func(id string) string { return id },
		Proxy: proxy, Sink: app.Sink, App: app,
		Clients: faultClients, During: faultDuring, Before: faultBefore, After: faultAfter,
		Deadline: faultWait,
		Quiet:    func(ctx context.Context) error { return allDelivered(ctx, a) },
	}
	ctx, cancel := context.WithTimeout(ctx, 3*faultWait)
	defer cancel()
	t, err := run.Do(ctx, f)
	if err != nil {
		return t, fmt.Errorf("%w\n%s", err, srv.tail())
	}
	return t, nil
}

// faultFailure says what a row breaks of intake's promises, "" when
// nothing: a lost webhook, a duplicate effect (at the consumer, or in the
// application's database), an answer other than 2xx or
// 503 or none at all while the fault was on, a webhook never acknowledged.
func faultFailure(t faults.Tally) string {
	var why []string
	if t.Lost > 0 {
		why = append(why, fmt.Sprintf("%d acknowledged webhooks never reached the consumer", t.Lost))
	}
	if t.Twice > 0 {
		why = append(why, fmt.Sprintf("%d webhooks reached the consumer as more than one event", t.Twice))
	}
	if t.AppliedTwice > 0 || t.Unapplied > 0 {
		why = append(why, fmt.Sprintf("the application on package inbox applied %d acknowledged webhooks twice and %d never", t.AppliedTwice, t.Unapplied))
	}
	if bad := t.Bad(); len(bad) > 0 {
		why = append(why, fmt.Sprintf("answered %v while the fault was on", bad))
	}
	if t.Unanswered > 0 {
		why = append(why, fmt.Sprintf("%d posts unanswered within the provider's timeout", t.Unanswered))
	}
	if t.Acked != t.Posted {
		why = append(why, fmt.Sprintf("%d of %d webhooks acknowledged", t.Acked, t.Posted))
	}
	return strings.Join(why, "; ")
}

// deliveryOf is the GitHub delivery id in a consumer call's envelope.
func deliveryOf(body []byte) string {
	var env struct {
		Data struct{ Delivery string } `json:"data"`
	}
	json.Unmarshal(body, &env)
	return env.Data.Delivery
}

// allDelivered waits until every event on the server is delivered, so that
// redeliveries still to come are counted.
func allDelivered(ctx context.Context, a *admin) error {
	deadline := time.Now().Add(faultWait)
	for {
		done, err := everyEventDelivered(a)
		if err == nil && done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("events not all delivered within %v (%v)", faultWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func everyEventDelivered(a *admin) (bool, error) {
	cursor := ""
	for {
		var page struct {
			Items []struct {
				State string `json:"state"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		if err := a.do(http.MethodGet, "/api/v1/events?limit=500&cursor="+cursor, nil, &page); err != nil {
			return false, err
		}
		for _, e := range page.Items {
			if e.State != "delivered" {
				return false, nil
			}
		}
		if page.NextCursor == "" {
			return true, nil
		}
		cursor = page.NextCursor
	}
}

// faultNames lists the campaign's network faults, for --fault's help.
func faultNames() string {
	var names []string
	for _, f := range faults.Network {
		names = append(names, fmt.Sprintf("%q", f.Name))
	}
	return strings.Join(names, ", ")
}
