package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The attacks on the doors of DESIGN §26: B drives each from outside, as
// fast as the answers come, and counts the answers by status (a 429 or a
// 503 is an answer: the door's budget saying no).

// eventsPerMessage is the most events one message may make
// (intake.MaxEventsPerMessage): what the events-rate, catalog and seed
// scripts make from each message.
const eventsPerMessage = 1000

// The searches attack: its searchers and the events it searches through.
const (
	searchers    = 16
	seedMessages = 30
)

// answers counts what a door answered, by status ("transport" when no
// answer came), and the requests the phase's end cut short.
type answers struct {
	mu  sync.Mutex
	by  map[string]int
	cut int
}

func (a *answers) count(ctx context.Context, status int, err error) {
	key := strconv.Itoa(status)
	if err != nil {
		if ctx.Err() != nil {
			a.mu.Lock()
			a.cut++
			a.mu.Unlock()
			return
		}
		key = "transport"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.by[key]++
}

func (a *answers) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("%s (%d unanswered at the phase's end)", formatErrors(a.by), a.cut)
}

// hammer runs workers loops of do until ctx ends; wait returns once they
// have, with what do's calls were answered.
func hammer(ctx context.Context, workers int, do func(ctx context.Context, worker, i int) (int, error)) (wait func() *answers) {
	got := &answers{by: map[string]int{}}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				status, err := do(ctx, w, i)
				got.count(ctx, status, err)
			}
		})
	}
	return func() *answers { wg.Wait(); return got }
}

// attackClient keeps a connection per worker, so the attack pays no
// handshakes a real one would not.
func attackClient(workers int, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: workers, DisableCompression: true}}
}

// call sends one request (body nil for none, else of size bytes) with
// key as its bearer when given, and returns the answer's status.
func call(ctx context.Context, client *http.Client, method, url, key string, body io.Reader, size int64) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// bKey makes another key of B's, with role.
func (n *noisy) bKey(role string) (string, error) {
	var out struct{ Key string }
	err := n.a.post("/api/v1/keys", map[string]any{"org_id": n.orgB.id, "role": role}, &out)
	return out.Key, err
}

// eventsScript is an interpret script making eventsPerMessage events of
// each message, typed and filled by the expressions given (i counts the
// events, n is the body's own n).
func eventsScript(typ, data string) map[string]any {
	return map[string]any{"script": fmt.Sprintf(
		`function interpret(r){var n=r.json.n,e=[];for(var i=0;i<%d;i++)e.push({type:%s,data:%s});return e}`,
		eventsPerMessage, typ, data)}
}

// seedScript makes events a word search finds ("shipped") or not
// ("refunded").
var seedScript = eventsScript(`"order.shipped"`, `{order:n*1000+i,note:"parcel "+i+" shipped to the warehouse"}`)

func prepareSearches(n *noisy) error {
	if err := n.bSide(seedScript, 0); err != nil {
		return err
	}
	var err error
	if n.bKeyed, err = n.bKey("viewer"); err != nil {
		return err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range seedMessages {
		if err := post(context.Background(), client, n.bURL, fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			return fmt.Errorf("seeding B's events: %w", err)
		}
	}
	// Made at B's events budget: a thousand a second past its burst.
	fmt.Fprintf(n.progress, "seeding %d of B's events\n", seedMessages*eventsPerMessage)
	for at := time.Now(); n.bSettled() < seedMessages; time.Sleep(500 * time.Millisecond) {
		if time.Since(at) > 3*time.Minute {
			return fmt.Errorf("seeding B's events: not settled in 3 minutes: %s", n.bStates())
		}
	}
	return nil
}

func startSearches(ctx context.Context, n *noisy) func() string {
	queries := []string{"match=" + url.QueryEscape(`{"x":[1]}`), "q=refunded", "q=shipped"}
	client := attackClient(searchers, 30*time.Second)
	wait := hammer(ctx, searchers, func(ctx context.Context, w, i int) (int, error) {
		return call(ctx, client, http.MethodGet, n.base+"/api/v1/events?"+queries[(w+i)%len(queries)], n.bKeyed, nil, 0)
	})
	return func() string {
		return fmt.Sprintf("B's searches answered %s; %s", wait(), n.bStates())
	}
}

func startMetrics(ctx context.Context, n *noisy) func() string {
	const scrapers = 8
	client := attackClient(scrapers, 30*time.Second)
	wait := hammer(ctx, scrapers, func(ctx context.Context, _, _ int) (int, error) {
		return call(ctx, client, http.MethodGet, n.base+"/metrics", "", nil, 0)
	})
	return func() string { return fmt.Sprintf("the scrapes answered %s", wait()) }
}

func prepareEventsRate(n *noisy) error {
	return n.bSide(eventsScript(`"rate"`, `{i:i}`), 0)
}

// prepareCatalog makes every message's types new: "t<n>.<i>".
func prepareCatalog(n *noisy) error {
	return n.bSide(eventsScript(`"t"+n+"."+i`, `{i:i}`), 0)
}

// startPosters posts to B's URL from 4 loops, each body numbered anew.
func startPosters(ctx context.Context, n *noisy) func() string {
	const posters = 4
	client := attackClient(posters, 30*time.Second)
	var seq atomic.Int64
	wait := hammer(ctx, posters, func(ctx context.Context, _, _ int) (int, error) {
		body := fmt.Appendf(nil, `{"n":%d}`, seq.Add(1))
		return call(ctx, client, http.MethodPost, n.bURL, "", bytes.NewReader(body), int64(len(body)))
	})
	return func() string {
		return fmt.Sprintf("B's webhooks answered %s; %s", wait(), n.bStates())
	}
}

// bodiesSize is the size of each body of the bodies attack: the most the
// bench's servers take (--max-body-bytes 64MiB).
const bodiesSize = 64 << 20

func prepareBodies(n *noisy) error {
	return n.bSide(map[string]any{"id_field": "n"}, bodiesSize)
}

// startBodies posts four bodies at once, each numbered anew, one shared
// tail of '<' after the number, so the bench holds one copy.
func startBodies(ctx context.Context, n *noisy) func() string {
	const bodies = 4
	head := func(i int64) []byte { return fmt.Appendf(nil, `{"n":"%012d","s":"`, i) }
	tail := append(bytes.Repeat([]byte("<"), bodiesSize-len(head(0))-2), `"}`...)
	client := attackClient(bodies, 2*time.Minute)
	var seq atomic.Int64
	wait := hammer(ctx, bodies, func(ctx context.Context, _, _ int) (int, error) {
		body := io.MultiReader(bytes.NewReader(head(seq.Add(1))), bytes.NewReader(tail))
		return call(ctx, client, http.MethodPost, n.bURL, "", body, bodiesSize)
	})
	return func() string {
		return fmt.Sprintf("B's %d MiB bodies answered %s; %s", bodiesSize>>20, wait(), n.bStates())
	}
}

func prepareConsumerTests(n *noisy) error {
	var err error
	if n.hang, err = startHangingReceiver(); err != nil {
		return err
	}
	if n.bConsumerID, err = n.bConsumer(n.hang.url, ""); err != nil {
		return err
	}
	n.bKeyed, err = n.bKey("operator")
	return err
}

func startConsumerTests(ctx context.Context, n *noisy) func() string {
	const testers = 500
	client := attackClient(testers, 30*time.Second)
	wait := hammer(ctx, testers, func(ctx context.Context, _, _ int) (int, error) {
		return call(ctx, client, http.MethodPost, n.base+"/api/v1/consumers/"+n.bConsumerID+"/test", n.bKeyed, nil, 0)
	})
	return func() string {
		return fmt.Sprintf("B's consumer tests answered %s; its receiver got %d calls and answered none", wait(), n.hang.calls.Load())
	}
}
