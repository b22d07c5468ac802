package e2e

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const stripeSecret = "whsec_e2e_stripe"

// orderService is the example application built on package inbox
// (examples/orderservice), running as its own process.
type orderService struct {
	url  string
	logs *logBuffer
}

// startOrderService builds and starts the order service over a fresh
// database, taking deliveries signed under secret.
func startOrderService(t *testing.T, secret string) *orderService {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "orderservice")
	build := exec.Command("go", "build", "-o", bin, "github.com/intakehq/intake/examples/orderservice")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the order service: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "orders.db"), "--secret", secret)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	o := &orderService{logs: &logBuffer{}}
	var mu sync.Mutex
	listening := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			o.logs.Write(append(sc.Bytes(), '\n'))
			mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "orderservice listening" {
				listening <- rec.Addr
			}
		}
		cmd.Wait()
	}()
	select {
	case addr := <-listening:
		o.url = "http://" + addr
	case <-done:
		t.Fatalf("the order service exited before listening:\n%s", o.logs)
	case <-time.After(30 * time.Second):
		t.Fatal("the order service did not listen within 30s")
	}
	return o
}

type orderView struct {
	PaidCents int64  `json:"paid_cents"`
	Status    string `json:"status"`
	History   []struct {
		EventID  string `json:"event_id"`
		ReplayOf string `json:"replay_of"`
		Note     string `json:"note"`
	} `json:"history"`
}

func (o *orderService) order(t *testing.T, id string) orderView {
	t.Helper()
	resp, err := http.Get(o.url + "/orders/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v orderView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("GET /orders/%s (%d): %v", id, resp.StatusCode, err)
	}
	return v
}

// answerLosingProxy forwards deliveries to the order service and loses
// its answer to the first delivery of each event id: the connection is
// cut after the service answered, as when the service dies between its
// commit and its answer. It counts the deliveries of each id.
type answerLosingProxy struct {
	target atomic.Pointer[string]
	mu     sync.Mutex
	seen   map[string]int
}

func (p *answerLosingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	p.mu.Lock()
	p.seen[id]++
	first := p.seen[id] == 1
	p.mu.Unlock()
	req, _ := http.NewRequest(r.Method, *p.target.Load()+r.URL.Path, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if first {
		panic(http.ErrAbortHandler) // the answer is lost
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

func (p *answerLosingProxy) deliveries(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[id]
}

// postStripePayment posts a signed Stripe payment_intent.succeeded for
// order to url.
func postStripePayment(t *testing.T, url, stripeEventID, order string, amount int) {
	t.Helper()
	now := strconv.FormatInt(time.Now().Unix(), 10)
	body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"payment_intent.succeeded","created":%s,"livemode":false,`+
		`"data":{"object":{"id":"pi_%s","object":"payment_intent","amount":%d,"currency":"eur","metadata":{"order_id":%q}}}}`,
		stripeEventID, now, stripeEventID, amount, order)
	mac := hmac.New(sha256.New, []byte(stripeSecret))
	mac.Write([]byte(now + "."))
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", "t="+now+",v1="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("ingress answered %d %s", resp.StatusCode, b)
	}
}

// TestAnApplicationOnTheInboxAppliesAPaymentOnceThroughALostAnswerAndIsToldOfItsReplay
// runs the real intake and the example order service, built on package
// inbox, as two processes. A Stripe payment reaches the service, whose
// first answer is lost after its commit: intake retries, and the retry is
// answered 2xx without paying the order again. An operator then replays
// the payment's message (`intake replay`): the service receives the replay
// with replay_of naming the original event, notes it, does not charge
// again, and intake records the delivery as ignored.
func TestAnApplicationOnTheInboxAppliesAPaymentOnceThroughALostAnswerAndIsToldOfItsReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary and the order service")
	}
	s := start(t, t.TempDir())
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "shop"}, &org)
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "stripe", "name": "stripe live",
		"secrets": []string{stripeSecret}}, &conn)
	var ep struct{ Token string }
	s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &ep)

	proxy := &answerLosingProxy{seen: map[string]int{}}
	front := httptest.NewServer(proxy)
	defer front.Close()
	var cons struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org.ID, "name": "orders", "app": "orders",
		"url": front.URL + "/intake/events", "event_types": []string{"stripe.payment_intent.*"}}, &cons)
	app := startOrderService(t, cons.SigningSecret)
	proxy.target.Store(&app.url)

	resp, err := http.Post(app.url+"/orders", "application/json", bytes.NewReader([]byte(`{"id":"ord_1","total_cents":2000}`)))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("open the order: %v %v", resp, err)
	}
	resp.Body.Close()

	postStripePayment(t, s.url+"/webhooks/"+ep.Token, "evt_pay_1", "ord_1", 2000)
	var original eventDetail
	eventually(t, 60*time.Second, "the payment event delivered", func() bool {
		evs := s.events(t)
		if len(evs) != 1 {
			return false
		}
		original = s.event(t, evs[0].ID)
		return original.State == "delivered"
	})
	if n := proxy.deliveries(original.ID); n != 2 {
		t.Fatalf("the order service received the payment %d times, want 2 (the first answer lost, one retry)", n)
	}
	if last := original.Deliveries[len(original.Deliveries)-1]; last.Outcome != "handled" || last.StatusCode != http.StatusOK {
		t.Fatalf("intake recorded the retry as %+v, want handled 200", last)
	}
	o := app.order(t, "ord_1")
	if o.PaidCents != 2000 || o.Status != "paid" || len(o.History) != 1 || o.History[0].EventID != original.ID {
		t.Fatalf("after the lost answer and its retry the order reads %+v; want paid 2000 once, by %s", o, original.ID)
	}

	msgs := s.messages(t)
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	s.cli(t, "replay", "--message", msgs[0].ID)
	var replay eventDetail
	eventually(t, 60*time.Second, "the replayed payment delivered", func() bool {
		for _, e := range s.events(t) {
			if e.ID != original.ID {
				replay = s.event(t, e.ID)
				return replay.State == "delivered"
			}
		}
		return false
	})
	if last := replay.Deliveries[len(replay.Deliveries)-1]; last.Outcome != "ignored" {
		t.Fatalf("intake recorded the replay's delivery as %+v, want ignored", last)
	}
	o = app.order(t, "ord_1")
	if o.PaidCents != 2000 || len(o.History) != 2 {
		t.Fatalf("after the replay the order reads %+v; want paid 2000 and the replay noted", o)
	}
	if h := o.History[1]; h.EventID != replay.ID || h.ReplayOf != original.ID {
		t.Fatalf("the replay reached the service as %+v; want event %s replaying %s", h, replay.ID, original.ID)
	}
	if n := proxy.deliveries(replay.ID); n != 2 {
		t.Fatalf("the replay was delivered %d times, want 2 (its first answer lost too)", n)
	}
}
