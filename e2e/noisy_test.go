package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The noisy-neighbour attacks of DESIGN §18 on the real binary: org B does
// what an org can do, and org A's pipeline goes on. Each test asserts an
// order (A's delivery arrives while B's calls are still held) or an answer
// (B's script is refused with a code), under a deadline of its own, so a
// regression fails in seconds rather than at the package's timeout.

// noisyOrg is an org made through the admin API, with its own key.
type noisyOrg struct{ id, key string }

func newNoisyOrg(t *testing.T, s *server, name string) noisyOrg {
	t.Helper()
	var org struct {
		ID     string
		APIKey string `json:"api_key"`
	}
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": name}, &org)
	return noisyOrg{id: org.ID, key: org.APIKey}
}

// endpoint creates a connection of the org and an endpoint on it without a
// rate limit, and returns the endpoint's id and ingress URL.
func (o noisyOrg) endpoint(t *testing.T, s *server, conn map[string]any, maxBody int64) (id, url string) {
	t.Helper()
	conn["org_id"] = o.id
	var c struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", conn, &c)
	ep := map[string]any{"connection_id": c.ID, "rate_per_sec": 0}
	if maxBody > 0 {
		ep["max_body_bytes"] = maxBody
	}
	var e struct{ ID, Token string }
	s.api(t, "POST", "/api/v1/endpoints", ep, &e)
	return e.ID, s.url + "/webhooks/" + e.Token
}

// consumer subscribes url to the org's events of the given types.
func (o noisyOrg) consumer(t *testing.T, s *server, name, url, transform string, types ...string) string {
	t.Helper()
	req := map[string]any{"org_id": o.id, "name": name, "app": name, "url": url, "event_types": types}
	if transform != "" {
		req["transform"] = transform
	}
	var c struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", req, &c)
	return c.ID
}

// holdingReceiver accepts every call and answers none until the test ends:
// a consumer or notification URL that hangs. It counts the calls it got
// and the calls that ended anyway (intake gave up on them).
type holdingReceiver struct {
	*httptest.Server
	got, released atomic.Int64
	first         chan struct{} // closed at the first call
	once          sync.Once
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	h := &holdingReceiver{first: make(chan struct{})}
	done := make(chan struct{})
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.got.Add(1)
		h.once.Do(func() { close(h.first) })
		select {
		case <-done:
		case <-r.Context().Done():
			h.released.Add(1)
		}
	}))
	t.Cleanup(func() { close(done); h.Close() })
	return h
}

// newSignallingReceiver answers every call at once and signals each on
// delivered (a signal no one waits for yet is dropped).
func newSignallingReceiver(t *testing.T) (*httptest.Server, <-chan struct{}) {
	delivered := make(chan struct{}, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case delivered <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(fast.Close)
	return fast, delivered
}

// postJSON posts body to url and fails the test unless it is acknowledged.
func postJSON(t *testing.T, url string, body []byte) {
	t.Helper()
	if err := tryPostJSON(url, body); err != nil {
		t.Fatal(err)
	}
}

func tryPostJSON(url string, body []byte) error {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return nil
}

// countMessages counts the endpoint's messages in a state.
func (s *server) countMessages(t *testing.T, endpointID, state string) int {
	t.Helper()
	var page struct{ Items []message }
	s.api(t, "GET", "/api/v1/messages?limit=500&endpoint_id="+endpointID+"&state="+state, nil, &page)
	return len(page.Items)
}

// TestAHangingConsumerOfOneOrgDoesNotHoldAnotherOrgsDeliveries: B's
// consumer takes every call and answers none, with a backlog of 300
// events; once B holds all the calls intake will give it, A's webhook is
// delivered to A's consumer while every one of B's calls is still open.
func TestAHangingConsumerOfOneOrgDoesNotHoldAnotherOrgsDeliveries(t *testing.T) {
	hanging := newHoldingReceiver(t)
	fast, delivered := newSignallingReceiver(t)

	// B's calls are held far longer than this test waits.
	s := start(t, t.TempDir(), "--delivery-timeout", "120s")
	a, b := newNoisyOrg(t, s, "alpha"), newNoisyOrg(t, s, "bravo")
	_, aURL := a.endpoint(t, s, map[string]any{"provider": "github", "name": "gh", "secrets": []string{githubSecret}}, 0)
	a.consumer(t, s, "alpha-app", fast.URL, "", "github.*")
	bEndpoint, bURL := b.endpoint(t, s, map[string]any{"provider": "none", "name": "open", "config": map[string]any{"id_field": "id"}}, 0)
	bConsumer := b.consumer(t, s, "bravo-app", hanging.URL, "", "none.*")

	const backlog = 300
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := c; i < backlog; i += 8 {
				if err := tryPostJSON(bURL, fmt.Appendf(nil, `{"id":"b-%d"}`, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// B holds all it will get: every message routed, and its receiver holds
	// every call intake counts in flight, the same number a second apart.
	var held int64
	var stableSince time.Time
	eventually(t, 30*time.Second, "B's backlog routed and its calls all held", func() bool {
		if s.countMessages(t, bEndpoint, "processed") < backlog {
			return false
		}
		var h health
		s.api(t, "GET", "/api/v1/consumers/"+bConsumer+"/health", nil, &h)
		got := hanging.got.Load()
		switch {
		case got == 0 || int64(h.InFlight) != got:
			stableSince = time.Time{}
		case got != held || stableSince.IsZero():
			held, stableSince = got, time.Now()
		}
		return !stableSince.IsZero() && time.Since(stableSince) >= time.Second
	})

	resp, err := http.DefaultClient.Do(githubDelivery(aURL, "alpha-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-delivered:
	case <-time.After(10 * time.Second):
		t.Fatalf("A's webhook was not delivered within 10s while B's consumer held %d calls", hanging.got.Load())
	}
	if n := hanging.released.Load(); n != 0 {
		t.Fatalf("A's delivery arrived only after %d of B's %d held calls ended", n, hanging.got.Load())
	}
	t.Logf("A delivered while B's receiver held %d calls", hanging.got.Load())
}

// nativeLoop runs for seconds inside one native builtin, where an engine
// that only interrupts bytecode cannot stop it.
const nativeLoop = `function transform(e,c){var a=[];a.length=1e8;a.lastIndexOf(1);return null}`

// TestNativeLoopDryRunsOfOneOrgStopAtTheirLimitAndAnotherOrgsTransformDelivers:
// B's key starts 16 dry runs of a transform that loops inside a native
// builtin; each answers its time-limit error within the test's deadline,
// and A's webhook, through A's own transform, is delivered meanwhile.
func TestNativeLoopDryRunsOfOneOrgStopAtTheirLimitAndAnotherOrgsTransformDelivers(t *testing.T) {
	delivered := make(chan []byte, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case delivered <- b:
		default:
		}
	}))
	defer fast.Close()

	s := start(t, t.TempDir(), "--script-timeout", "250ms")
	a, b := newNoisyOrg(t, s, "alpha"), newNoisyOrg(t, s, "bravo")
	_, aURL := a.endpoint(t, s, map[string]any{"provider": "github", "name": "gh", "secrets": []string{githubSecret}}, 0)
	a.consumer(t, s, "alpha-app", fast.URL, `function transform(e,c){return {body:{delivery:e.data.delivery}}}`, "github.*")

	// Every answer is due within the deadline, 40 times the limit.
	const deadline = 10 * time.Second
	client := &http.Client{Timeout: deadline}
	body, _ := json.Marshal(map[string]any{"kind": "transform", "source": nativeLoop,
		"event": map[string]any{"id": "x", "type": "bravo.t", "data": map[string]any{}}})
	answers := make(chan string, 16)
	started := time.Now()
	for range 16 {
		go func() {
			req, _ := http.NewRequest("POST", s.url+"/api/v1/rules/test", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+b.key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				answers <- "no answer: " + err.Error()
				return
			}
			defer resp.Body.Close()
			var res struct{ Error string }
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &res) != nil || res.Error == "" {
				answers <- fmt.Sprintf("answered %d %s, want a time-limit error", resp.StatusCode, raw)
				return
			}
			answers <- ""
		}()
	}

	resp, err := http.DefaultClient.Do(githubDelivery(aURL, "alpha-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case got := <-delivered:
		if !strings.Contains(string(got), `"delivery":"alpha-1"`) {
			t.Fatalf("A's consumer got %s, want its transform's body", got)
		}
	case <-time.After(time.Until(started.Add(deadline))):
		t.Fatalf("A's webhook was not delivered within %v of B's 16 dry runs starting", deadline)
	}
	for range 16 {
		if answer := <-answers; answer != "" {
			t.Fatalf("a dry run of B's native loop, %v after they started: %s", time.Since(started).Round(time.Millisecond), answer)
		}
	}
}

// TestAHangingNotificationReceiverOfOneOrgDoesNotHoldAnotherOrgsNotifications:
// B's notification URL takes the call and never answers; A's
// notification, due after B's, arrives while B's call is still open.
func TestAHangingNotificationReceiverOfOneOrgDoesNotHoldAnotherOrgsNotifications(t *testing.T) {
	hanging := newHoldingReceiver(t)
	notes := make(chan []byte, 4)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case notes <- b:
		default:
		}
	}))
	defer fast.Close()

	// The notifier's call to B is held far longer than this test waits.
	s := start(t, t.TempDir(), "--notify-interval", "100ms", "--delivery-timeout", "120s")
	// A script that throws makes its message dead at once: a
	// message.dead notice about the endpoint.
	dying := map[string]any{"provider": "none", "name": "dying", "config": map[string]any{"script": `function interpret(r){throw new Error("no")}`}}
	a, b := newNoisyOrg(t, s, "alpha"), newNoisyOrg(t, s, "bravo")
	aEndpoint, aURL := a.endpoint(t, s, dying, 0)
	_, bURL := b.endpoint(t, s, dying, 0)
	for o, url := range map[noisyOrg]string{a: fast.URL, b: hanging.URL} {
		s.api(t, "PUT", "/api/v1/orgs/"+o.id+"/notifications", map[string]any{"url": url, "topics": []string{"message.dead"}}, nil)
	}

	postJSON(t, bURL, []byte(`{"n":1}`))
	select {
	case <-hanging.first:
	case <-time.After(10 * time.Second):
		t.Fatal("B's notification URL was not called within 10s")
	}
	postJSON(t, aURL, []byte(`{"n":1}`))
	select {
	case n := <-notes:
		var got struct{ Type, Subject string }
		if json.Unmarshal(n, &got) != nil || got.Type != "message.dead" || got.Subject != aEndpoint {
			t.Fatalf("A's receiver got %s, want message.dead about %s", n, aEndpoint)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A's notification did not arrive within 10s while B's notification URL held its call")
	}
	if n := hanging.released.Load(); n != 0 {
		t.Fatalf("A's notification arrived only after B's held call ended")
	}
}

// messageDetail is a message with its events.
type messageDetail struct {
	message
	ErrorCode    string   `json:"error_code"`
	ErrorMessage string   `json:"error_message"`
	EventIDs     []string `json:"event_ids"`
}

// settledOn waits until the endpoint's one message settles and returns it.
func (s *server) settledOn(t *testing.T, endpointID string, within time.Duration) messageDetail {
	t.Helper()
	var page struct{ Items []message }
	eventually(t, within, "the message settles", func() bool {
		s.api(t, "GET", "/api/v1/messages?endpoint_id="+endpointID, nil, &page)
		return len(page.Items) == 1 && settled(page.Items[0].State)
	})
	var m messageDetail
	s.api(t, "GET", "/api/v1/messages/"+page.Items[0].ID, nil, &m)
	return m
}

// TestAScriptReturning50000EventsMakesItsMessageDeadTooManyEvents: an
// interpret script that names 50 000 events for one message makes none of
// them; the message is dead with the code too_many_events.
func TestAScriptReturning50000EventsMakesItsMessageDeadTooManyEvents(t *testing.T) {
	// A generous time limit: the script must finish for its result to be
	// judged.
	s := start(t, t.TempDir(), "--script-timeout", "2s")
	b := newNoisyOrg(t, s, "bravo")
	ep, url := b.endpoint(t, s, map[string]any{"provider": "none", "name": "many",
		"config": map[string]any{"script": `function interpret(r){return new Array(50000).fill({type:"t"})}`}}, 0)
	postJSON(t, url, []byte(`{"n":1}`))
	m := s.settledOn(t, ep, 20*time.Second)
	if m.State != "dead" || m.ErrorCode != "too_many_events" || len(m.EventIDs) != 0 {
		t.Fatalf("the message settled %s (%s: %.80s) with %d events, want dead too_many_events with none",
			m.State, m.ErrorCode, m.ErrorMessage, len(m.EventIDs))
	}
}

// TestALargeBodyForAnInterpretScriptMakesItsMessageDeadAndTheServerLives:
// a body twice the script's memory limit, posted to an unsigned connection
// with an interpret script, is not expanded into the script: the message
// is dead `script: body too large`, and the server goes on serving.
func TestALargeBodyForAnInterpretScriptMakesItsMessageDeadAndTheServerLives(t *testing.T) {
	const memory = 4 << 20
	// The endpoint's cap: room for the body, within the 10 MiB PostgreSQL
	// keeps in its database without a blob store.
	const limit = 5 * memory / 2
	s := start(t, t.TempDir(), "--script-memory", fmt.Sprint(memory), "--script-timeout", "2s", "--max-body-bytes", fmt.Sprint(limit))
	b := newNoisyOrg(t, s, "bravo")
	ep, url := b.endpoint(t, s, map[string]any{"provider": "none", "name": "big",
		"config": map[string]any{"script": `function interpret(r){return [{type:"big",data:{n:r.body.length}}]}`}}, limit)
	// A JSON string of '<', which JSON encoding writes six bytes for
	// (\u003c) when the body is built into the script's request.
	body := append(append([]byte(`{"s":"`), bytes.Repeat([]byte("<"), 2*memory)...), `"}`...)
	postJSON(t, url, body)
	m := s.settledOn(t, ep, 20*time.Second)
	if m.State != "dead" || !strings.Contains(m.ErrorCode+": "+m.ErrorMessage, "script: body too large") {
		t.Fatalf("the message settled %s (%s: %.120s), want dead script: body too large", m.State, m.ErrorCode, m.ErrorMessage)
	}
	select {
	case <-s.done:
		t.Fatalf("the server exited:\n%s", s.logs)
	default:
	}
	resp, err := http.Get(s.url + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz after the body: %v %v", resp, err)
	}
	resp.Body.Close()
}
