package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
)

// Every webhook of the mix is what the provider's adapter accepts under
// its connection's secret, a new provider event, and the providers take
// turns.
func TestMixSendsEachProviderASignedNewEventInTurn(t *testing.T) {
	var routes []mixRoute
	for _, p := range mixProviders {
		routes = append(routes, mixRoute{provider: p, secret: mixSecret(p), path: "/webhooks/tok-" + p})
	}
	// Half made ahead, half as they are sent.
	mix, err := newMixer(routes, len(routes), time.Minute, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for n := range int64(2 * len(routes)) {
		url, h, body, id, err := mix(n, "http://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		r := routes[n%int64(len(routes))]
		if url != "http://127.0.0.1:1"+r.path {
			t.Errorf("webhook %d went to %s, want %s's endpoint", n, url, r.provider)
		}
		a, _ := provider.Lookup(r.provider)
		req := &provider.Request{Method: http.MethodPost, URL: url, Header: h, Body: body, ReceivedAt: time.Now()}
		if err := a.Verify(req, [][]byte{[]byte(r.secret)}, provider.Config{}); err != nil {
			t.Errorf("%s: %v", r.provider, err)
		}
		if ids[id] {
			t.Errorf("%s: provider event id %s sent twice", r.provider, id)
		}
		ids[id] = true
	}
}

// A sample made ahead is sent up to a run's length later: each still
// verifies when it is received then, Paddle's (5 s of tolerance) because
// they are made as they are sent.
func TestMixSamplesMadeAheadStillVerifyWhenSentLate(t *testing.T) {
	var routes []mixRoute
	for _, p := range mixProviders {
		routes = append(routes, mixRoute{provider: p, secret: mixSecret(p), path: "/webhooks/tok-" + p})
	}
	const late = 30 * time.Second
	clock := time.Now()
	mix, err := newMixer(routes, 3*len(routes), mixSpan(late), func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(late)
	for n := range int64(3 * len(routes)) {
		url, h, body, _, err := mix(n, "http://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		r := routes[n%int64(len(routes))]
		a, _ := provider.Lookup(r.provider)
		req := &provider.Request{Method: http.MethodPost, URL: url, Header: h, Body: body, ReceivedAt: clock}
		if err := a.Verify(req, [][]byte{[]byte(r.secret)}, provider.Config{}); err != nil {
			t.Errorf("webhook %d (%s) received %s after it was made: %v", n, r.provider, late, err)
		}
	}
}

// mixIntake is a fake intake for --provider mix: an endpoint per
// connection, each webhook read by its provider's adapter and delivered to
// the consumer under the provider event id the adapter found.
func mixIntake(t *testing.T) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	providers := map[string]string{} // endpoint token → provider
	var conns []string
	var consumerTypes []string
	var consumerURL atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/orgs", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"org-1"}`)
	})
	mux.HandleFunc("POST /api/v1/connections", func(w http.ResponseWriter, r *http.Request) {
		var c struct{ Provider string }
		json.NewDecoder(r.Body).Decode(&c)
		mu.Lock()
		conns = append(conns, c.Provider)
		id := "conn-" + strconv.Itoa(len(conns)-1)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"`+id+`"}`)
	})
	mux.HandleFunc("POST /api/v1/endpoints", func(w http.ResponseWriter, r *http.Request) {
		var e struct {
			ConnectionID string `json:"connection_id"`
		}
		json.NewDecoder(r.Body).Decode(&e)
		i, _ := strconv.Atoi(strings.TrimPrefix(e.ConnectionID, "conn-"))
		mu.Lock()
		tok := "tok-" + strconv.Itoa(i)
		providers[tok] = conns[i]
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"token":"`+tok+`"}`)
	})
	mux.HandleFunc("POST /api/v1/consumers", func(w http.ResponseWriter, r *http.Request) {
		var c struct {
			URL        string
			EventTypes []string `json:"event_types"`
		}
		json.NewDecoder(r.Body).Decode(&c)
		consumerURL.Store(c.URL)
		mu.Lock()
		consumerTypes = c.EventTypes
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"c-1"}`)
	})
	mux.HandleFunc("POST /webhooks/{token}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		p := providers[r.PathValue("token")]
		mu.Unlock()
		a, ok := provider.Lookup(p)
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		in, err := a.Interpret(&provider.Request{Method: r.Method, Header: r.Header, Body: body, ReceivedAt: time.Now()}, provider.Config{})
		if err != nil || len(in.Events) != 1 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		env, _ := json.Marshal(map[string]any{"provider_event_id": in.Events[0].ProviderEventID, "type": in.Events[0].Type})
		go func() {
			if resp, err := http.Post(consumerURL.Load().(string), "application/json", bytes.NewReader(env)); err == nil {
				resp.Body.Close()
			}
		}()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &consumerTypes
}

func TestBenchWithMixConnectsEachProviderAndDeliversEveryWebhook(t *testing.T) {
	srv, types := mixIntake(t)
	o := options{url: srv.URL, token: "t", provider: "mix", clients: 2, duration: 300 * time.Millisecond,
		baseline: true, e2e: true, consumerAddr: "127.0.0.1:0"}
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e := r.Intake.E2E
	if r.Intake.Acked < len(mixProviders) || len(r.Intake.Errors) != 0 || e == nil || e.Delivered != r.Intake.Acked || e.Missing != 0 {
		t.Fatalf("acked %d, errors %v, e2e %+v: want every provider's webhooks acked and delivered", r.Intake.Acked, r.Intake.Errors, e)
	}
	if len(*types) != len(mixProviders) {
		t.Errorf("the consumer subscribed to %v, want each provider's type", *types)
	}
	if r.Baseline == nil || r.Baseline.Acked == 0 || len(r.Baseline.Errors) != 0 {
		t.Errorf("baseline %+v", r.Baseline)
	}
}

func TestMixRefusesWhatOnlyGitHubsLoadCanDo(t *testing.T) {
	for _, args := range [][]string{
		{"--spawn", "--provider", "mix", "--e2e", "--rules"},
		{"--spawn", "--provider", "mix", "--e2e", "--consumer", "nats://127.0.0.1:4222/bench.{type}"},
	} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "mix") {
			t.Errorf("%v: err %v, want one about mix", args, err)
		}
	}
	if _, err := parseFlags([]string{"--spawn", "--provider", "mix", "--e2e"}); err != nil {
		t.Errorf("--provider mix --e2e: %v", err)
	}
}
