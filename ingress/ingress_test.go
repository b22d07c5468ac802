package ingress_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/internal/token"
)

type env struct {
	store intake.Store
	clock *testkit.Clock
	h     *ingress.Handler
	mux   *http.ServeMux
	ep    intake.Endpoint
	token string
}

func setup(t *testing.T, cfg ingress.Config, edit func(*intake.Endpoint)) *env {
	t.Helper()
	return setupOn(t, testkit.SQLite(t), cfg, edit)
}

// setupOn is setup on the store s.
func setupOn(t *testing.T, s intake.Store, cfg ingress.Config, edit func(*intake.Endpoint)) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{store: s, clock: testkit.NewClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: e.clock.Now()}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "none", Name: "test", CreatedAt: e.clock.Now()}
	e.token = token.New("")
	e.ep = intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: token.Hash(e.token),
		Enabled: true, MaxBodyBytes: 1024, RatePerSec: 500, Burst: 1000, CreatedAt: e.clock.Now()}
	if edit != nil {
		edit(&e.ep)
	}
	if err := s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateEndpoint(ctx, e.ep); err != nil {
		t.Fatal(err)
	}
	e.ep.Version = 1 // as every row starts
	if cfg.Store == nil {
		cfg.Store = s
	}
	cfg.Clock = e.clock
	e.h = ingress.New(cfg)
	e.mux = http.NewServeMux()
	e.mux.Handle("/webhooks/{token}", e.h)
	return e
}

// connected stores conn, of e's org, and an endpoint of it, returning
// the endpoint's token.
func (e *env) connected(t *testing.T, conn intake.Connection) (string, intake.Endpoint) {
	t.Helper()
	ctx := context.Background()
	if err := e.store.CreateConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	tok := token.New("")
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: conn.ID, TokenHash: token.Hash(tok),
		Enabled: true, MaxBodyBytes: 1024, CreatedAt: e.clock.Now()}
	if err := e.store.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	return tok, ep
}

func (e *env) post(path string, body io.Reader, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", path, body)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, r)
	return w
}

func (e *env) stored(t *testing.T) []intake.Message {
	t.Helper()
	page, err := e.store.ListMessages(context.Background(), intake.Scope{}, intake.MessageFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return page.Items
}

func assertAnswerRevealsNothing(t *testing.T, w *httptest.ResponseRecorder, e *env) {
	t.Helper()
	b := w.Body.String()
	for _, secret := range []string{e.token, e.ep.ID, e.ep.OrgID, e.ep.ConnectionID, "/webhooks", "sqlite"} {
		if strings.Contains(b, secret) {
			t.Fatalf("answer %q reveals %q", b, secret)
		}
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestIngressStoresRequestThenAcknowledges(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	w := e.post("/webhooks/"+e.token+"?x=1", strings.NewReader(`{"hello":"world"}`), http.Header{
		"Content-Type": {"application/json"}, "Authorization": {"Basic abc"}, "Connection": {"keep-alive"},
		"Upgrade": {"h2c"},
	})
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	assertAnswerRevealsNothing(t, w, e)
	msgs := e.stored(t)
	if len(msgs) != 1 {
		t.Fatalf("%d messages stored", len(msgs))
	}
	m := msgs[0]
	if got := w.Body.String(); got != `{"ok":true}`+"\n" || strings.Contains(got, m.ID) {
		t.Fatalf("answer %q, want a receipt that names no id", got)
	}
	if m.State != intake.MessageQueued || m.Query != "x=1" || m.Method != "POST" || !m.ReceivedAt.Equal(e.clock.Now()) ||
		m.Digest != sha256hex(`{"hello":"world"}`) {
		t.Fatalf("message = %+v", m)
	}
	b, err := e.store.MessageBody(context.Background(), intake.Scope{}, m.ID)
	h := b.Header
	if err != nil || string(b.Body) != `{"hello":"world"}` {
		t.Fatalf("body %q %v", b.Body, err)
	}
	if h.Get("Authorization") != "Basic abc" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("kept headers %v", h)
	}
	if h.Get("Connection") != "" || h.Get("Upgrade") != "" {
		t.Fatalf("hop-by-hop headers kept: %v", h)
	}
}

func TestIngressRejectsUnknownAndDisabledEndpointsAndRecordsNothing(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	if w := e.post("/webhooks/"+token.New(""), strings.NewReader("{}"), nil); w.Code != http.StatusNotFound {
		t.Fatalf("unknown token: %d", w.Code)
	}
	e.ep.Enabled = false
	if err := e.store.UpdateEndpoint(context.Background(), intake.Scope{}, e.ep); err != nil {
		t.Fatal(err)
	}
	w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil)
	if w.Code != http.StatusNotFound {
		t.Fatalf("disabled: %d", w.Code)
	}
	assertAnswerRevealsNothing(t, w, e)
	if n := len(e.stored(t)); n != 0 {
		t.Fatalf("%d messages recorded", n)
	}
}

// countingReader counts what ingress reads of a body.
type countingReader struct {
	n int64
	r io.Reader
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

func TestIngressRefusesOversizedBodyReadingAtMostLimitPlusOne(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	// Declared too large: refused before a byte of the body is read.
	declared := &countingReader{r: strings.NewReader(strings.Repeat("x", 2000))}
	r := httptest.NewRequest("POST", "/webhooks/"+e.token, declared)
	r.ContentLength = 2000
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("declared length: %d", w.Code)
	}
	if declared.n != 0 {
		t.Fatalf("read %d bytes of a body declared %d bytes long, over the limit %d", declared.n, r.ContentLength, e.ep.MaxBodyBytes)
	}
	// Undeclared length (chunked): read stops at limit+1.
	body := &countingReader{r: strings.NewReader(strings.Repeat("x", 1<<20))}
	r = httptest.NewRequest("POST", "/webhooks/"+e.token, body)
	r.ContentLength = -1
	rec := httptest.NewRecorder()
	e.mux.ServeHTTP(rec, r)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: %d", rec.Code)
	}
	if body.n > e.ep.MaxBodyBytes+1 {
		t.Fatalf("read %d bytes of an oversized body, limit %d", body.n, e.ep.MaxBodyBytes)
	}
	if n := len(e.stored(t)); n != 0 {
		t.Fatalf("%d messages recorded", n)
	}
	// Exactly the limit is fine.
	if w := e.post("/webhooks/"+e.token, strings.NewReader(strings.Repeat("x", 1024)), nil); w.Code != http.StatusOK {
		t.Fatalf("at limit: %d", w.Code)
	}
}

func TestIngressRateLimitsWithRetryAfter(t *testing.T) {
	e := setup(t, ingress.Config{}, func(ep *intake.Endpoint) { ep.RatePerSec, ep.Burst = 1, 2 })
	for i := range 2 {
		if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("third: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if n := len(e.stored(t)); n != 2 {
		t.Fatalf("%d messages recorded, want 2", n)
	}
	e.clock.Advance(time.Second) // the bucket refills with the injected clock
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("after refill: %d", w.Code)
	}
}

type brokenPermits struct{}

func (brokenPermits) Allow(intake.Endpoint, time.Time) (bool, time.Duration, error) {
	return false, 0, errors.New("permit store down")
}

func TestIngressAdmitsWhenThePermitStoreFails(t *testing.T) {
	e := setup(t, ingress.Config{Permits: brokenPermits{}}, nil)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if n := len(e.stored(t)); n != 1 {
		t.Fatalf("%d messages recorded", n)
	}
}

// failingStore refuses every commit, as a full or broken disk would.
type failingStore struct{ intake.Store }

func (failingStore) Ingest(context.Context, *intake.Message) error {
	return errors.New("disk I/O error")
}

func TestIngressAnswers503AndAcknowledgesNothingWhenStorageFails(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	broken := ingress.New(ingress.Config{Store: failingStore{e.store}, Clock: e.clock})
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", broken)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/webhooks/"+e.token, strings.NewReader("{}")))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d", w.Code)
	}
	if strings.Contains(w.Body.String(), "disk") {
		t.Fatalf("answer leaks the error: %q", w.Body.String())
	}
}

func TestIngressDrainingAnswers503(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	e.h.Drain()
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d", w.Code)
	}
	if n := len(e.stored(t)); n != 0 {
		t.Fatalf("%d recorded while draining", n)
	}
}

func TestIngressAnswersSlackURLVerificationAfterStoringIt(t *testing.T) {
	sealer := testkit.Sealer(t)
	e := setup(t, ingress.Config{Sealer: sealer}, nil)
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	conn := intake.Connection{ID: intake.NewID(), OrgID: e.ep.OrgID, Provider: "slack", Name: "slack", CreatedAt: e.clock.Now()}
	var err error
	if conn.SealedSecrets, err = sealer.SealConnectionSecrets(conn, []string{secret}); err != nil {
		t.Fatal(err)
	}
	tok, _ := e.connected(t, conn)
	const body = `{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	signed := func(key string) http.Header {
		ts := strconv.FormatInt(e.clock.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte("v0:" + ts + ":" + body))
		return http.Header{"Content-Type": {"application/json"}, "X-Slack-Request-Timestamp": {ts},
			"X-Slack-Signature": {"v0=" + hex.EncodeToString(mac.Sum(nil))}}
	}
	w := e.post("/webhooks/"+tok, strings.NewReader(body), signed(secret))
	if w.Code != http.StatusOK || w.Body.String() != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" ||
		!strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("challenge answer: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if n := len(e.stored(t)); n != 1 {
		t.Fatalf("%d messages recorded, want the handshake kept", n)
	}
	forged := e.post("/webhooks/"+tok, strings.NewReader(body), signed("not the secret"))
	if forged.Code != http.StatusForbidden || strings.Contains(forged.Body.String(), "3eZbrw1a") {
		t.Fatalf("forged challenge answer: %d %q", forged.Code, forged.Body)
	}
}

func TestIngressEchoesTheAsanaHookSecretInTheHandshakeAnswer(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	conn := intake.Connection{ID: intake.NewID(), OrgID: e.ep.OrgID, Provider: "asana", Name: "asana", CreatedAt: e.clock.Now()}
	tok, _ := e.connected(t, conn)
	w := e.post("/webhooks/"+tok, strings.NewReader(""), http.Header{"X-Hook-Secret": {"b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81"}})
	if w.Code != http.StatusOK || w.Header().Get("X-Hook-Secret") != "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81" {
		t.Fatalf("handshake answer: %d %v", w.Code, w.Header())
	}
}

// A handshake's answer echoes what the caller sent: a browser must never
// read it as anything but its content type.
func TestHandshakeEchoAnswersWithNosniff(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		provider, method string
		header           http.Header
		echoed           string
	}{
		{"asana", "POST", http.Header{"X-Hook-Secret": {"<html>b537207f</html>"}}, "<html>b537207f</html>"},
		{"okta", "GET", http.Header{"X-Okta-Verification-Challenge": {"<script>x</script>"}}, "verification"},
	} {
		conn := intake.Connection{ID: intake.NewID(), OrgID: e.ep.OrgID, Provider: tc.provider, Name: tc.provider, CreatedAt: e.clock.Now()}
		if err := e.store.CreateConnection(ctx, conn); err != nil {
			t.Fatal(err)
		}
		tok := token.New("")
		ep := intake.Endpoint{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: conn.ID, TokenHash: token.Hash(tok),
			Enabled: true, MaxBodyBytes: 1024, CreatedAt: e.clock.Now()}
		if err := e.store.CreateEndpoint(ctx, ep); err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(tc.method, "/webhooks/"+tok, strings.NewReader(""))
		for k, v := range tc.header {
			r.Header[k] = v
		}
		w := httptest.NewRecorder()
		e.mux.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !strings.Contains(fmt.Sprint(w.Header())+w.Body.String(), tc.echoed) {
			t.Fatalf("%s handshake answer: %d %v %q", tc.provider, w.Code, w.Header(), w.Body)
		}
		if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s handshake answer: X-Content-Type-Options %q, want nosniff", tc.provider, got)
		}
	}
}

func TestDisablingAnEndpointTakesEffectWithinTheCacheTTL(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("enabled: %d", w.Code)
	}
	e.ep.Enabled = false
	if err := e.store.UpdateEndpoint(context.Background(), intake.Scope{}, e.ep); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second) // the default TTL
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusNotFound {
		t.Fatalf("a second after disabling: %d", w.Code)
	}
	if n := len(e.stored(t)); n != 1 {
		t.Fatalf("%d messages recorded, want only the one before disabling", n)
	}
}

func TestIngressRefusesWhileTheStorageQuotaIsReachedAndRecovers(t *testing.T) {
	q := &ingress.Quota{Limit: 1}
	e := setup(t, ingress.Config{Quota: q}, nil)
	if err := q.Sample(context.Background(), e.store); err != nil || q.Used() <= 0 {
		t.Fatalf("sampled %d bytes, %v", q.Used(), err)
	}
	w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("over quota: %d", w.Code)
	}
	if n := len(e.stored(t)); n != 0 {
		t.Fatalf("%d messages stored over quota", n)
	}
	q.Limit = 1 << 40 // the operator raised it (or the sweeper freed space)
	if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusOK {
		t.Fatalf("under quota: %d", w.Code)
	}
}

func TestTheStorageQuotaRefusingLeavesANoticeAtMostOnceAMinute(t *testing.T) {
	q := &ingress.Quota{Limit: 1}
	e := setup(t, ingress.Config{Quota: q}, nil)
	if err := q.Sample(context.Background(), e.store); err != nil {
		t.Fatal(err)
	}
	refuse := func() {
		t.Helper()
		if w := e.post("/webhooks/"+e.token, strings.NewReader("{}"), nil); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("over quota: %d", w.Code)
		}
	}
	refuse()
	e.clock.Advance(30 * time.Second)
	refuse()
	notices, err := e.store.UnsentNotices(context.Background(), 10)
	if err != nil || len(notices) != 1 {
		t.Fatalf("notices after two refusals in a minute = %+v %v, want one", notices, err)
	}
	n := notices[0]
	if n.Topic != intake.NoticeStorageQuota || n.Subject != "storage" || n.OrgID != e.ep.OrgID || !strings.Contains(n.Detail, "quota") {
		t.Fatalf("notice = %+v", n)
	}
	e.clock.Advance(30 * time.Second)
	refuse()
	if notices, _ = e.store.UnsentNotices(context.Background(), 10); len(notices) != 2 {
		t.Fatalf("%d notices a minute after the first, want 2", len(notices))
	}
}

// hangingLookups is a store whose endpoint lookups wait, as through a
// partition, until their context ends.
type hangingLookups struct{ intake.Store }

func (hangingLookups) EndpointByTokenHash(ctx context.Context, _ []byte) (intake.Endpoint, error) {
	<-ctx.Done()
	return intake.Endpoint{}, intake.Unavailable(ctx.Err())
}

// TestIngressAnswers503WhenAnEndpointLookupHangsPastTheStoreWait: a lookup
// the store does not answer (a partition holds its connection) is given up
// after the store wait, and the webhook answered 503 well within the time
// a provider waits, rather than when the provider hangs up.
func TestIngressAnswers503WhenAnEndpointLookupHangsPastTheStoreWait(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	const wait = 50 * time.Millisecond
	h := ingress.New(ingress.Config{Store: hangingLookups{e.store}, Clock: e.clock, StoreWait: wait})
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", h)
	done := make(chan int, 1)
	go func() {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("POST", "/webhooks/"+e.token, strings.NewReader("{}")))
		done <- w.Code
	}()
	select {
	case code := <-done:
		if code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", code)
		}
	case <-time.After(100 * wait):
		t.Fatalf("no answer after %v while the lookup hung; the store wait is %v", 100*wait, wait)
	}
}
