package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pacedConsumer counts the calls per webhook delivery id and the peak
// of calls in flight at once.
type pacedConsumer struct {
	*httptest.Server
	mu       sync.Mutex
	calls    map[string]int
	at       []time.Time // when each call was answered
	inFlight atomic.Int32
	peak     atomic.Int32
	status   atomic.Int32
	hold     time.Duration
}

func newPacedConsumer(t *testing.T, hold time.Duration) *pacedConsumer {
	c := &pacedConsumer{calls: map[string]int{}}
	c.status.Store(http.StatusOK)
	c.hold = hold
	c.Server = httptest.NewServer(http.HandlerFunc(c.handle))
	t.Cleanup(c.Close)
	return c
}

func (c *pacedConsumer) handle(w http.ResponseWriter, r *http.Request) {
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	var env struct {
		Data struct{ Delivery string } `json:"data"`
	}
	json.NewDecoder(r.Body).Decode(&env)
	time.Sleep(c.hold) // a slow application
	c.mu.Lock()
	c.calls[env.Data.Delivery]++
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	w.WriteHeader(int(c.status.Load()))
}

func (c *pacedConsumer) snapshot() (distinct, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.calls {
		distinct++
		total += n
	}
	return distinct, total
}

type health struct {
	State       string `json:"state"`
	Delivered1h int    `json:"delivered_1h"`
	Failed1h    int    `json:"failed_1h"`
	Held        int    `json:"held"`
	Due         int    `json:"due"`
	InFlight    int    `json:"in_flight"`
	LastStatus  int    `json:"last_status"`
}

// TestAPausedConsumerHoldsItsDeliveriesWhileAnotherIsServedAndDrainsOnResume:
// from the CLI, on the real binary: a consumer limited to one call at a time
// is paused; webhooks reach the other consumer at once while the paused one's
// wait, spending nothing; on resume every one arrives exactly once, one at a
// time.
func TestAPausedConsumerHoldsItsDeliveriesWhileAnotherIsServedAndDrainsOnResume(t *testing.T) {
	slow := newPacedConsumer(t, 5*time.Millisecond)
	healthy := newPacedConsumer(t, 0)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	add := func(name, url string) string {
		var c struct{ ID string }
		if err := json.Unmarshal([]byte(s.cli(t, "consumers", "add", "--org", orgs.Items[0].ID, "--name", name, "--app", name,
			"--url", url, "--event-type", "github.*", "--json")), &c); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	slowID, _ := add("slow", slow.URL), add("healthy", healthy.URL)
	out := s.cli(t, "consumers", "update", slowID, "--max-in-flight", "1", "--rate", "200", "--json")
	if !strings.Contains(out, `"max_in_flight": 1`) || !strings.Contains(out, `"rate_per_sec": 200`) {
		t.Fatalf("consumers update answered:\n%s", out)
	}
	if out := s.cli(t, "consumers", "pause", slowID, "--json"); !strings.Contains(out, `"paused": true`) {
		t.Fatalf("consumers pause answered:\n%s", out)
	}

	const n = 30
	for i := range n {
		resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, "held-"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			t.Fatalf("webhook %d: %d", i, resp.StatusCode)
		}
	}
	eventually(t, 30*time.Second, "the healthy consumer receives every webhook", func() bool {
		d, _ := healthy.snapshot()
		return d == n
	})
	var h health
	eventually(t, 30*time.Second, "the paused consumer's deliveries are held", func() bool {
		if err := json.Unmarshal([]byte(s.cli(t, "consumers", "health", slowID, "--json")), &h); err != nil {
			t.Fatal(err)
		}
		return h.Held == n
	})
	if h.State != "paused" || h.Due != 0 || h.Failed1h != 0 {
		t.Fatalf("health of the paused consumer: %+v", h)
	}
	if d, _ := slow.snapshot(); d != 0 {
		t.Fatalf("the paused consumer was called %d times", d)
	}
	for _, e := range s.events(t) {
		if e.State == "dead" {
			t.Fatalf("an event died while its consumer was paused: %+v", e)
		}
	}

	s.cli(t, "consumers", "resume", slowID)
	eventually(t, 60*time.Second, "the resumed consumer receives every held webhook", func() bool {
		d, _ := slow.snapshot()
		return d == n
	})
	eventually(t, 30*time.Second, "every event is delivered", func() bool {
		for _, e := range s.events(t) {
			if e.State != "delivered" {
				return false
			}
		}
		return true
	})
	if d, total := slow.snapshot(); d != n || total != n {
		t.Fatalf("the resumed consumer got %d webhooks in %d calls, want %d in %d", d, total, n, n)
	}
	if p := slow.peak.Load(); p != 1 {
		t.Fatalf("max_in_flight 1, yet %d calls were in flight at once", p)
	}
	if err := json.Unmarshal([]byte(s.cli(t, "consumers", "health", slowID, "--json")), &h); err != nil {
		t.Fatal(err)
	}
	if h.State != "enabled" || h.Delivered1h != n || h.Held != 0 || h.LastStatus != 200 {
		t.Fatalf("health after the drain: %+v", h)
	}
}

// TestAFailingConsumerTripsItsBreakerAndIsAudited: a consumer that fails
// every call opens its circuit breaker after breaker_failures calls; then
// its deliveries wait and no event dies. Its five events wait while it is
// paused, so that on its resume their five first calls go out together,
// and its retries wait two seconds, so that none is made before the
// failures it follows have settled, however busy the machine.
func TestAFailingConsumerTripsItsBreakerAndIsAudited(t *testing.T) {
	down := newPacedConsumer(t, 0)
	down.status.Store(http.StatusInternalServerError)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	var c struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "down", "app": "down", "url": down.URL,
		"event_types": []string{"github.*"}}, &c)
	s.cli(t, "consumers", "update", c.ID, "--breaker-failures", "3", "--retry-attempts", "2", "--retry-base", "2s")
	s.cli(t, "consumers", "pause", c.ID)
	for i := range 5 {
		resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, "down-"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var held health
	eventually(t, 30*time.Second, "the paused consumer's five events are held", func() bool {
		s.api(t, "GET", "/api/v1/consumers/"+c.ID+"/health", nil, &held)
		return held.Held == 5
	})
	s.cli(t, "consumers", "resume", c.ID)
	var h health
	eventually(t, 30*time.Second, "the breaker trips", func() bool {
		s.api(t, "GET", "/api/v1/consumers/"+c.ID+"/health", nil, &h)
		return h.State == "tripped"
	})
	var audit struct {
		Items []struct {
			Action, Actor string
			TargetID      string `json:"target_id"`
		}
	}
	s.api(t, "GET", "/api/v1/audit", nil, &audit)
	found := false
	for _, a := range audit.Items {
		found = found || (a.Action == "consumer.tripped" && a.Actor == "intake" && a.TargetID == c.ID)
	}
	if !found {
		t.Fatalf("no consumer.tripped audit entry: %+v", audit.Items)
	}
	// Tripped: the calls stop, and the waiting events do not die although
	// each allows only two attempts.
	if distinct, calls := down.snapshot(); distinct != 5 || calls != 5 {
		t.Fatalf("%d calls for %d events before the breaker held them, want the five first calls alone", calls, distinct)
	}
	for _, e := range s.events(t) {
		if e.State == "dead" {
			t.Fatalf("an event died while the breaker was open: %+v", e)
		}
	}
}

// TestConsoleInBrowserPausesAConsumerSetsItsLimitsAndShowsItsHealth: the
// consumer page's controls, in Chromium.
func TestConsoleInBrowserPausesAConsumerSetsItsLimitsAndShowsItsHealth(t *testing.T) {
	got := newPacedConsumer(t, 0)
	s := start(t, t.TempDir())
	acme := setupStripeOrg(t, s, "acme")
	var cons struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": acme.id, "name": "ledger", "app": "ledger", "url": got.URL,
		"event_types": []string{"stripe.*"}}, &cons)

	tab := browserTab(t)
	signIn(t, tab, s.url, acme.key, "header.top")
	step(t, tab, "open the consumer",
		chromedp.Navigate(s.url+"/console/consumers/"+cons.ID),
		chromedp.WaitVisible(chromedp.ID("health")),
	)
	if st := read(t, tab, "state", chromedp.Text(chromedp.ID("health-state"))); st != "enabled" {
		t.Fatalf("health state %q, want enabled", st)
	}
	step(t, tab, "pause", chromedp.Click(chromedp.ID("pause")), chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if st := read(t, tab, "state", chromedp.Text(chromedp.ID("health-state"))); st != "paused" {
		t.Fatalf("after Pause the state reads %q", st)
	}
	postStripe(t, s, acme, "invoice.paid")
	postStripe(t, s, acme, "invoice.paid")
	reloadUntil(t, tab, "the backlog shows 2 held", func() bool {
		return strings.Contains(read(t, tab, "backlog", chromedp.Text(chromedp.ID("backlog"))), "2 held")
	})
	step(t, tab, "a held event's page", chromedp.Navigate(s.url+"/console/events/"+s.events(t)[0].ID),
		chromedp.WaitVisible(chromedp.ID("deliveries")))
	if d := read(t, tab, "deliveries", chromedp.Text(chromedp.ID("deliveries"))); !strings.Contains(d, "held") || !strings.Contains(d, "paused") {
		t.Fatalf("the held event's deliveries read: %s", d)
	}
	// From the page without the pause's flash, so the next flash waited
	// for is the save's.
	step(t, tab, "set a rate and one call at a time",
		chromedp.Navigate(s.url+"/console/consumers/"+cons.ID),
		chromedp.WaitVisible(chromedp.ID("controls-form")),
		chromedp.SendKeys(chromedp.ID("rate_per_sec"), "5"),
		chromedp.SendKeys(chromedp.ID("max_in_flight"), "1"),
		chromedp.Click(chromedp.ID("save-controls")),
		chromedp.WaitVisible(chromedp.CSS("p.flash")),
		chromedp.WaitVisible(chromedp.ID("max_in_flight")),
	)
	if v := read(t, tab, "max in flight", chromedp.Value(chromedp.ID("max_in_flight"))); v != "1" {
		t.Fatalf("max in flight box holds %q after saving", v)
	}
	step(t, tab, "a bad ordering expression is refused beside the form, the edit kept",
		chromedp.SendKeys(chromedp.ID("ordering"), "event.data.("),
		chromedp.Click(chromedp.ID("save-controls")),
		chromedp.WaitVisible(chromedp.ID("controls-error")),
	)
	if msg := read(t, tab, "controls error", chromedp.Text(chromedp.ID("controls-error"))); !strings.Contains(msg, "ordering") && !strings.Contains(msg, "Syntax") {
		t.Fatalf("the refused ordering reads: %s", msg)
	}
	if v := read(t, tab, "ordering box", chromedp.Value(chromedp.ID("ordering"))); v != "event.data.(" {
		t.Fatalf("the ordering box holds %q after the refusal, want the edit kept", v)
	}
	step(t, tab, "resume",
		chromedp.Navigate(s.url+"/console/consumers/"+cons.ID),
		chromedp.WaitVisible(chromedp.ID("pause")),
		chromedp.Click(chromedp.ID("pause")),
		chromedp.WaitVisible(chromedp.CSS("p.flash")),
	)
	eventually(t, 30*time.Second, "both held events arrive", func() bool {
		_, total := got.snapshot()
		return total == 2
	})
	reloadUntil(t, tab, "the health shows 2 delivered", func() bool {
		return strings.Contains(read(t, tab, "health", chromedp.Text(chromedp.ID("health"))), "2 delivered")
	})
	step(t, tab, "rotate the signing secret", chromedp.Click(chromedp.ID("rotate-secret")), chromedp.WaitVisible(chromedp.ID("new-secret")))
	shown := read(t, tab, "new secret", chromedp.Text(chromedp.ID("new-secret")))
	if !strings.Contains(shown, "whsec_") || !strings.Contains(shown, "old secret too") {
		t.Fatalf("after Rotate the page reads: %s", shown)
	}
	step(t, tab, "open the page again", chromedp.Navigate(s.url+"/console/consumers/"+cons.ID), chromedp.WaitVisible(chromedp.ID("health")))
	if has := read(t, tab, "secret on the page again", chromedp.Evaluate[bool](`document.getElementById("new-secret") !== null`)); has {
		t.Fatal("the rotated secret is shown again")
	}
}

// TestThreeProcessesHoldOneConsumersRateAndConcurrencyTogether: three
// `intake serve` processes on one PostgreSQL database share a consumer
// limited to 2 calls in flight and 20 calls a second. Webhooks posted to
// all three reach it no more than 2 at a time, and no faster than its rate
// allows: the limits are the consumer's, not each process's.
func TestThreeProcessesHoldOneConsumersRateAndConcurrencyTogether(t *testing.T) {
	if !onPostgres() {
		t.Skip("runs with INTAKE_E2E_STORE=postgres: three processes need one PostgreSQL database")
	}
	c := newPacedConsumer(t, 20*time.Millisecond)
	procs, _ := onePostgres(t, 3)
	path := setupGitHub(t, procs[0])
	var orgs struct{ Items []struct{ ID string } }
	procs[0].api(t, "GET", "/api/v1/orgs", nil, &orgs)
	var cons struct{ ID string }
	procs[0].api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "limited", "app": "limited",
		"url": c.URL, "event_types": []string{"github.*"}}, &cons)
	procs[0].api(t, "PATCH", "/api/v1/consumers/"+cons.ID, map[string]any{"max_in_flight": 2, "rate_per_sec": 20}, nil)

	const n = 80
	p := &poster{procs: procs, path: path, dead: make([]atomic.Bool, len(procs)), acked: map[string]bool{}}
	p.post(deliveryIDs(0, n), 8)
	if p.ackedCount() != n {
		t.Fatalf("%d of %d webhooks acknowledged", p.ackedCount(), n)
	}
	eventually(t, 60*time.Second, "the consumer receives every webhook", func() bool {
		d, _ := c.snapshot()
		return d == n
	})
	if _, total := c.snapshot(); total != n {
		t.Fatalf("%d calls for %d webhooks", total, n)
	}
	if peak := c.peak.Load(); peak > 2 {
		t.Fatalf("max_in_flight 2 across three processes, yet %d calls were in flight at once", peak)
	}
	// A token bucket of 20/s with a one-second burst lets at most 20 + 20·T
	// calls through in T seconds: 80 calls take at least 3 s. Slowness can
	// only make it longer; each process limiting on its own would allow
	// three times the rate.
	c.mu.Lock()
	span := c.at[len(c.at)-1].Sub(c.at[0])
	c.mu.Unlock()
	if min := time.Duration(float64(n-20)/20*0.9*float64(time.Second)) - 20*time.Millisecond; span < min {
		t.Fatalf("%d calls in %s: faster than 20/s allows (at least %s)", n, span, min)
	}
	t.Logf("%d calls in %s across three processes (rate 20/s, burst 20: at least %s), peak %d in flight", n, span, 3*time.Second, c.peak.Load())
}

// TestAnOrderedConsumerGetsOneSubjectsEventsInOrderThroughRetries: a
// consumer ordered by subject refuses the first call of every other event;
// unordered, the others would overtake them. Each event about the
// repository still reaches it handled only after the one before, in the
// order they were received.
func TestAnOrderedConsumerGetsOneSubjectsEventsInOrderThroughRetries(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	var handled []string
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Data struct{ Delivery string } `json:"data"`
		}
		json.NewDecoder(r.Body).Decode(&env)
		mu.Lock()
		defer mu.Unlock()
		i, _ := strconv.Atoi(strings.TrimPrefix(env.Data.Delivery, "ordered-"))
		if i%2 == 0 && !seen[env.Data.Delivery] {
			seen[env.Data.Delivery] = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		handled = append(handled, env.Data.Delivery)
	}))
	defer consumer.Close()
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	var c struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "ordered", "app": "ordered",
		"url": consumer.URL, "event_types": []string{"github.*"}}, &c)
	if out := s.cli(t, "consumers", "update", c.ID, "--ordering", "subject", "--breaker-failures", "1000", "--json"); !strings.Contains(out, `"ordering": "subject"`) {
		t.Fatalf("consumers update answered:\n%s", out)
	}
	const n = 12
	var want []string
	for i := range n {
		id := "ordered-" + strconv.Itoa(i)
		want = append(want, id)
		resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, id)) // every one about repository R_1
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	eventually(t, 60*time.Second, "every event handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == n
	})
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(handled, " ") != strings.Join(want, " ") {
		t.Fatalf("handled in the order\n%v\nwant\n%v", handled, want)
	}
}
