package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/redact"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/notify"
	"github.com/intakehq/intake/store/sqlite"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const secret = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I="

// received is one call a receiver took.
type received struct {
	header http.Header
	body   []byte
	query  string
}

// receiver is a notification URL or a Slack webhook that answers status.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []received
	status []int // answers in turn; the last one repeats; none: 200
}

func newReceiver(t *testing.T, status ...int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.calls = append(r.calls, received{req.Header.Clone(), body, req.URL.RawQuery})
		code := http.StatusOK
		if len(r.status) > 0 {
			code = r.status[min(len(r.calls), len(r.status))-1]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.calls...)
}

// env is a store with one org, a notifier on it and a clock.
type env struct {
	t      *testing.T
	store  *sqlite.Store
	sealer *seal.Sealer
	clock  *testkit.Clock
	m      *metrics.Metrics
	n      *notify.Notifier
	org    intake.Org
	conn   intake.Connection
	ep     intake.Endpoint
}

func newEnv(t *testing.T, policy delivery.Policy) *env {
	t.Helper()
	sealer := testkit.Sealer(t)
	e := &env{t: t, store: testkit.SQLite(t), sealer: sealer, clock: testkit.NewClock(t0), m: metrics.New()}
	e.org = e.newOrg("acme")
	e.conn = intake.Connection{ID: intake.NewID(), OrgID: e.org.ID, Provider: "stripe", Name: "acme", CreatedAt: t0}
	if err := e.store.CreateConnection(t.Context(), e.conn); err != nil {
		t.Fatal(err)
	}
	e.ep = intake.Endpoint{ID: intake.NewID(), OrgID: e.org.ID, ConnectionID: e.conn.ID, TokenHash: []byte("tok"), Enabled: true,
		MaxBodyBytes: 1 << 20, RatePerSec: 100, Burst: 100, CreatedAt: t0}
	if err := e.store.CreateEndpoint(t.Context(), e.ep); err != nil {
		t.Fatal(err)
	}
	e.n = notify.New(notify.Config{Store: e.store, Sealer: sealer, Clock: e.clock, Metrics: e.m,
		Sender: delivery.NewSender(delivery.Options{Policy: policy, Timeout: 5 * time.Second})})
	return e
}

func (e *env) newOrg(name string) intake.Org {
	o := intake.Org{ID: intake.NewID(), Name: name, CreatedAt: t0}
	if err := e.store.CreateOrg(e.t.Context(), o, intake.APIKey{ID: intake.NewID(), Prefix: "ik_" + name, Hash: []byte(name)}); err != nil {
		e.t.Fatal(err)
	}
	return o
}

// subscribe sends the org's notices of topics to url (signed) and slack;
// a url with credentials is sealed, as the control plane seals it.
func (e *env) subscribe(org intake.Org, url, slack string, topics ...string) {
	e.t.Helper()
	s := intake.NotificationSettings{OrgID: org.ID, URL: redact.URL(url), SealedSlackURL: e.sealer.SealNotificationSlackURL(org.ID, slack),
		Topics: topics, SealedSecret: e.sealer.SealNotificationSecret(org.ID, secret), UpdatedAt: e.clock.Now()}
	if s.URL != url {
		s.SealedURL = e.sealer.SealNotificationURL(org.ID, url)
	}
	if err := e.store.PutNotificationSettings(e.t.Context(), intake.Scope{}, s); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) notice(org intake.Org, topic, subject, detail string) {
	e.t.Helper()
	n := intake.Notice{ID: intake.NewID(), OrgID: org.ID, Topic: topic, Subject: subject, Detail: detail, At: e.clock.Now()}
	if err := e.store.InsertNotice(e.t.Context(), n); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) poll() {
	e.t.Helper()
	if err := e.n.Poll(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.n.Wait()
}

// verify checks a call's Standard Webhooks signature under secret, the
// spec's way: HMAC-SHA256 of "{id}.{timestamp}.{body}", base64, "v1,".
func verify(t *testing.T, r received, now time.Time) notify.Notification {
	t.Helper()
	id, stamp := r.header.Get("webhook-id"), r.header.Get("webhook-timestamp")
	if id == "" || stamp != strconv.FormatInt(now.Unix(), 10) {
		t.Fatalf("webhook-id %q, webhook-timestamp %q (want %d)", id, stamp, now.Unix())
	}
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + stamp + "."))
	mac.Write(r.body)
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); r.header.Get("webhook-signature") != want {
		t.Fatalf("webhook-signature %q, want %q", r.header.Get("webhook-signature"), want)
	}
	var n notify.Notification
	if err := json.Unmarshal(r.body, &n); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	return n
}

func TestANotificationIsSignedUnderTheOrgsSecretAndCarriesItsGroup(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL, "", intake.NoticeEventDead)
	e.notice(e.org, intake.NoticeEventDead, "cons_1", "event e1 is dead: consumer answered 500")
	e.poll()
	calls := url.got()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	n := verify(t, calls[0], t0)
	want := notify.Notification{Type: intake.NoticeEventDead, OrgID: e.org.ID, Subject: "cons_1", Count: 1, FirstAt: t0, LastAt: t0,
		Detail: "event e1 is dead: consumer answered 500"}
	if n != want {
		t.Fatalf("notification = %+v, want %+v", n, want)
	}
	var raw map[string]any
	json.Unmarshal(calls[0].body, &raw)
	for _, k := range []string{"type", "org_id", "subject", "count", "first_at", "last_at", "detail"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("body %s has no %q", calls[0].body, k)
		}
	}
	// Sent is sent: a later poll sends nothing again.
	e.clock.Advance(time.Hour)
	e.poll()
	if len(url.got()) != 1 {
		t.Fatalf("a sent notice was sent again: %d calls", len(url.got()))
	}
}

func TestTwelveNoticesInAWindowAreOneNotificationWithTheirCountThenTheNextWindow(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL, "", intake.NoticeSignatureFailures)
	for i := range 12 {
		e.notice(e.org, intake.NoticeSignatureFailures, e.ep.ID, "forged "+strconv.Itoa(i))
		e.clock.Advance(20 * time.Second)
	}
	sentAt := e.clock.Now()
	e.poll()
	calls := url.got()
	if len(calls) != 1 {
		t.Fatalf("%d calls for 12 notices, want 1", len(calls))
	}
	n := verify(t, calls[0], sentAt)
	if n.Count != 12 || !n.FirstAt.Equal(t0) || !n.LastAt.Equal(t0.Add(11*20*time.Second)) || n.Detail != "forged 11" {
		t.Fatalf("notification = %+v, want count 12 from the first to the last notice, the last one's detail", n)
	}

	// Within the window the next notices wait, counted, for it to end.
	e.clock.Advance(time.Minute)
	firstOfNext := e.clock.Now()
	for range 3 {
		e.notice(e.org, intake.NoticeSignatureFailures, e.ep.ID, "forged again")
		e.poll()
		e.clock.Advance(time.Minute)
	}
	if len(url.got()) != 1 {
		t.Fatalf("%d calls within the window, want still 1", len(url.got()))
	}
	// Another subject is another group, sent at once.
	e.notice(e.org, intake.NoticeSignatureFailures, "other-endpoint", "forged")
	e.poll()
	if calls = url.got(); len(calls) != 2 || verify(t, calls[1], e.clock.Now()).Subject != "other-endpoint" {
		t.Fatalf("another subject's notice did not go out at once: %d calls", len(calls))
	}
	e.clock.Set(sentAt.Add(5 * time.Minute))
	e.poll()
	calls = url.got()
	if len(calls) != 3 {
		t.Fatalf("%d calls once the window ended, want 3", len(calls))
	}
	n = verify(t, calls[2], sentAt.Add(5*time.Minute))
	if n.Count != 3 || !n.FirstAt.Equal(firstOfNext) || n.Subject != e.ep.ID {
		t.Fatalf("next window's notification = %+v, want count 3 from %v", n, firstOfNext)
	}
	e.clock.Advance(time.Hour)
	e.poll()
	if len(url.got()) != 3 {
		t.Fatalf("an empty window sent a notification: %d calls", len(url.got()))
	}
}

func TestAFailingReceiverIsRetriedWithBackoffThenGivenUp(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	down := newReceiver(t, http.StatusInternalServerError)
	e.subscribe(e.org, down.URL, "", intake.NoticeConsumerTripped)
	e.notice(e.org, intake.NoticeConsumerTripped, "cons_1", "the circuit breaker opened")
	e.poll()
	if len(down.got()) != 1 {
		t.Fatalf("%d calls, want the first", len(down.got()))
	}
	// 10 s, 20 s, 40 s, 80 s after each failure; nothing before.
	for i, wait := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second} {
		e.clock.Advance(wait - time.Second)
		e.poll()
		if got := len(down.got()); got != i+1 {
			t.Fatalf("retry %d came early: %d calls", i+1, got)
		}
		e.clock.Advance(time.Second)
		e.poll()
		if got := len(down.got()); got != i+2 {
			t.Fatalf("retry %d did not come after %v: %d calls", i+1, wait, got)
		}
	}
	e.clock.Advance(time.Hour)
	e.poll()
	calls := down.got()
	if len(calls) != 5 {
		t.Fatalf("%d calls, want 5 and then given up", len(calls))
	}
	for _, c := range calls[1:] {
		if c.header.Get("webhook-id") != calls[0].header.Get("webhook-id") {
			t.Fatal("a retry carried another webhook-id: the receiver cannot tell it is the same notification")
		}
	}
	if got := counter(t, e.m, "given_up"); got != 1 {
		t.Fatalf("given_up = %v, want 1", got)
	}
	if got := counter(t, e.m, "failed"); got != 4 {
		t.Fatalf("failed = %v, want 4", got)
	}
}

func TestAReceiverThatRecoversGetsTheNotificationOnce(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	flaky := newReceiver(t, http.StatusBadGateway, http.StatusBadGateway, http.StatusOK)
	slack := newReceiver(t)
	e.subscribe(e.org, flaky.URL, slack.URL, intake.NoticeConsumerRecovered)
	e.notice(e.org, intake.NoticeConsumerRecovered, "cons_1", "a call succeeded")
	for range 10 {
		e.poll()
		e.clock.Advance(time.Minute)
	}
	if len(flaky.got()) != 3 || len(slack.got()) != 1 {
		t.Fatalf("calls: url %d (want 3), slack %d (want 1: it took the first)", len(flaky.got()), len(slack.got()))
	}
	if got := counter(t, e.m, "sent"); got != 2 {
		t.Fatalf("sent = %v, want 2", got)
	}
}

func TestSlackReceivesAReadableMessage(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	slack := newReceiver(t)
	e.subscribe(e.org, "", slack.URL, intake.NoticeMessageDead)
	for range 2 {
		e.notice(e.org, intake.NoticeMessageDead, e.ep.ID, "message m1 is dead (permanent): no adapter")
		e.clock.Advance(time.Minute)
	}
	e.poll()
	calls := slack.got()
	if len(calls) != 1 {
		t.Fatalf("%d slack calls, want 1", len(calls))
	}
	var msg map[string]string
	if err := json.Unmarshal(calls[0].body, &msg); err != nil || len(msg) != 1 {
		t.Fatalf("slack body %s: want {\"text\": …}", calls[0].body)
	}
	want := "*intake: message.dead* — endpoint " + e.ep.ID + ` of connection "acme" (` + e.conn.ID + ") (org " + e.org.ID + ")\n" +
		"2 times between 2026-11-30T12:00:00Z and 2026-11-30T12:01:00Z\n" +
		"message m1 is dead (permanent): no adapter"
	if msg["text"] != want {
		t.Fatalf("slack text:\n%s\nwant:\n%s", msg["text"], want)
	}
	if calls[0].header.Get("webhook-signature") != "" || calls[0].header.Get("Content-Type") != "application/json" {
		t.Fatalf("slack headers %v", calls[0].header)
	}
}

func TestNoticesNoOneSubscribedToAreDroppedUnsent(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	unset := e.newOrg("globex")
	e.subscribe(e.org, url.URL, "", intake.NoticeEventDead)
	e.notice(unset, intake.NoticeEventDead, "c", "no settings")
	e.notice(e.org, intake.NoticeStorageQuota, "storage", "not subscribed")
	e.poll()
	if len(url.got()) != 0 {
		t.Fatalf("%d calls, want none", len(url.got()))
	}
	if left, _ := e.store.UnsentNotices(t.Context(), 10); len(left) != 0 {
		t.Fatalf("%d notices left unsent, want them dropped", len(left))
	}
	if got := counter(t, e.m, "dropped"); got != 2 {
		t.Fatalf("dropped = %v, want 2", got)
	}
}

func TestTheAddressPolicyRefusesANotificationURL(t *testing.T) {
	e := newEnv(t, delivery.Policy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL, "", intake.NoticeEventDead)
	e.notice(e.org, intake.NoticeEventDead, "c", "d")
	e.poll()
	if len(url.got()) != 0 {
		t.Fatal("the notifier reached an address the policy refuses")
	}
	if got := counter(t, e.m, "failed"); got != 1 {
		t.Fatalf("failed = %v, want 1", got)
	}
}

// The topics written by routing (consumer.*, event.dead) are sent as they
// are stored; the ones this package's neighbours produce are in
// produce_test.go.
func TestEveryRoutingTopicIsSentToItsSubscribers(t *testing.T) {
	for _, topic := range []string{intake.NoticeEventDead, intake.NoticeConsumerTripped, intake.NoticeConsumerRecovered, intake.NoticeConsumerDisabled} {
		t.Run(topic, func(t *testing.T) {
			e := newEnv(t, delivery.Policy{})
			url := newReceiver(t)
			e.subscribe(e.org, url.URL, "", topic)
			e.notice(e.org, topic, "cons_1", "detail of "+topic)
			e.poll()
			calls := url.got()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			if n := verify(t, calls[0], t0); n.Type != topic || n.Subject != "cons_1" || n.Detail != "detail of "+topic {
				t.Fatalf("notification = %+v", n)
			}
		})
	}
}

func TestRunPollsUntilItsContextEnds(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL, "", intake.NoticeEventDead)
	e.notice(e.org, intake.NoticeEventDead, "c", "d")
	n := notify.New(notify.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(url.got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil || len(url.got()) != 1 {
		t.Fatalf("run: %v, %d calls", err, len(url.got()))
	}
}

// counter reads intake_notifications_total{result}.
func counter(t *testing.T, m *metrics.Metrics, result string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "intake_notifications_total" {
			continue
		}
		for _, c := range f.GetMetric() {
			for _, l := range c.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return c.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestANotificationURLWithCredentialsIsPostedToWithThem(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL+"/ops?api_key=key-4t8&team=core", "", intake.NoticeEventDead)
	e.notice(e.org, intake.NoticeEventDead, "cons_1", "event e1 is dead: consumer answered 500")
	e.poll()
	calls := url.got()
	if len(calls) != 1 || calls[0].query != "api_key=key-4t8&team=core" {
		t.Fatalf("calls %+v, want one to the url with its api_key", calls)
	}
}
