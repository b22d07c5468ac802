package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/delivery/broker"
)

// brokerIntake is fakeIntake whose routing hands each webhook's envelope to
// intake's own delivery.Sender for the registered consumer's url, so a
// broker url is published to as the real server publishes.
func brokerIntake(t *testing.T) *httptest.Server {
	var consumerURL atomic.Value
	sender := delivery.NewSender(delivery.Options{Timeout: 5 * time.Second, Brokers: broker.All()})
	t.Cleanup(func() { sender.Close() })
	mux := http.NewServeMux()
	for path, answer := range map[string]string{
		"POST /api/v1/orgs":        `{"id":"org-1"}`,
		"POST /api/v1/connections": `{"id":"conn-1"}`,
		"POST /api/v1/endpoints":   `{"id":"ep-1","token":"tok-1","url":"http://elsewhere/webhooks/tok-1"}`,
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, answer)
		})
	}
	mux.HandleFunc("POST /api/v1/consumers", func(w http.ResponseWriter, r *http.Request) {
		var c struct{ URL string }
		json.NewDecoder(r.Body).Decode(&c)
		consumerURL.Store(c.URL)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"c-1"}`)
	})
	mux.HandleFunc("POST /webhooks/tok-1", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-GitHub-Delivery")
		env, _ := json.Marshal(map[string]any{"id": "evt_" + id, "provider_event_id": id})
		u, _ := consumerURL.Load().(string)
		res := sender.Deliver(r.Context(), "c-1", u, []string{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
			delivery.Publication{ID: "evt_" + id, Type: "github.push", Body: env}, time.Now())
		if res.Outcome != "handled" {
			t.Errorf("delivering to %s: %+v", u, res)
		}
		w.WriteHeader(http.StatusOK)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func benchTo(t *testing.T, consumerURL string) *Run {
	t.Helper()
	srv := brokerIntake(t)
	// Each webhook is acknowledged once its publication is on the broker,
	// and a broker's first publication (the topic's metadata, a stream
	// made) can take longer than a fraction of a second on a loaded
	// machine: the run lasts long enough for some to be acknowledged.
	o := options{url: srv.URL, token: "t", provider: "github", clients: 2, duration: 2 * time.Second,
		bodyBytes: 256, e2e: true, consumerAddr: "127.0.0.1:0", consumer: consumerURL}
	r, err := bench(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e := r.Intake.E2E
	if r.Intake.Acked == 0 || e == nil || e.Delivered != r.Intake.Acked || e.Missing != 0 || r.Intake.ToLastDeliveryPerSec <= 0 {
		t.Fatalf("acked %d, e2e %+v, to last delivery %g/s: want every acked webhook counted on the broker",
			r.Intake.Acked, e, r.Intake.ToLastDeliveryPerSec)
	}
	return r.Intake
}

func TestBenchCountsDeliveriesArrivingOnNATSJetStream(t *testing.T) {
	addr := os.Getenv("INTAKE_TEST_NATS")
	if addr == "" {
		addr = "127.0.0.1:4222"
	}
	if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NATS with JetStream is not reachable at %s (%v): CI must run it", addr, err)
		}
		t.Skipf("NATS is not reachable at %s: %v", addr, err)
	} else {
		c.Close()
	}
	suffix := rand.Text()[:12]
	r := benchTo(t, "nats://"+addr+"/intakebench"+suffix+".{type}?stream=INTAKE_BENCH_TEST_"+suffix)
	if r.E2E.Consumer != "nats" {
		t.Errorf("consumer %q, want nats", r.E2E.Consumer)
	}
}

func TestBenchCountsDeliveriesArrivingOnAnInProcessKafka(t *testing.T) {
	r := benchTo(t, "kafka://kfake/intakebench.{type}")
	if !strings.Contains(r.E2E.Consumer, "kfake") {
		t.Errorf("consumer %q, want it to say kfake", r.E2E.Consumer)
	}
	var text bytes.Buffer
	(&Report{Intake: r}).writeText(&text)
	if !strings.Contains(text.String(), "consumer: kafka (kfake, in this process)") {
		t.Errorf("report does not say where it delivered:\n%s", text.String())
	}
}

func TestParseFlagsConsumerNeedsE2EAndABrokerURL(t *testing.T) {
	for _, args := range [][]string{
		{"--spawn", "--consumer", "nats://127.0.0.1:4222/bench.{type}"},
		{"--spawn", "--e2e", "--consumer", "http://127.0.0.1:9/x"},
		{"--spawn", "--e2e", "--consumer", "nats://127.0.0.1:4222"},
		{"--spawn", "--e2e", "--consumer", "kafka://kfake/t?sasl=plain"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q: want an error", args)
		}
	}
	if _, err := parseFlags([]string{"--spawn", "--e2e", "--consumer", "kafka://kfake/bench.{type}"}); err != nil {
		t.Error(err)
	}
}
