package ingress_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/fair"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/internal/token"
)

// addEndpoint gives e's store another org with an endpoint taking bodies
// of up to maxBody bytes, and returns its token.
func (e *env) addEndpoint(t *testing.T, name string, maxBody int64) string {
	t.Helper()
	ctx := context.Background()
	org := intake.Org{ID: intake.NewID(), Name: name, CreatedAt: e.clock.Now()}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "none", Name: "test", CreatedAt: e.clock.Now()}
	tok := token.New("")
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: token.Hash(tok),
		Enabled: true, MaxBodyBytes: maxBody, CreatedAt: e.clock.Now()}
	for _, err := range []error{e.store.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_" + name, Hash: []byte(org.ID)}),
		e.store.CreateConnection(ctx, conn), e.store.CreateEndpoint(ctx, ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return tok
}

// send posts body to e's endpoint declaring length (-1: chunked).
func (e *env) send(body io.Reader, length int64) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/webhooks/"+e.token, body)
	r.ContentLength = length
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, r)
	return w
}

// stalledBody is a body whose sender stops once ingress starts reading
// it, until resume is closed.
type stalledBody struct {
	reading chan struct{} // closed at the first read
	resume  chan struct{}
	once    sync.Once
	r       io.Reader
}

func newStalledBody(b []byte) *stalledBody {
	return &stalledBody{reading: make(chan struct{}), resume: make(chan struct{}), r: bytes.NewReader(b)}
}

func (s *stalledBody) Read(p []byte) (int, error) {
	s.once.Do(func() { close(s.reading) })
	<-s.resume
	return s.r.Read(p)
}

// A body that would take its org past its share of the body memory waits
// for room, then is answered 503 with Retry-After and counted, while
// another org's small body is taken at once beside the first body still
// being read. Once that one is committed, nothing is held.
func TestABodyPastItsOrgsShareOfBodyMemoryWaitsThenIs503WhileAnotherOrgsBodyIsAccepted(t *testing.T) {
	// 16 KiB in all: one org alone may hold 12 KiB, two 6 KiB each.
	budget := &fair.Budget{What: "body memory", Total: 16 << 10, Wait: 10 * time.Millisecond}
	m := metrics.New()
	e := setup(t, ingress.Config{BodyMemory: budget, Metrics: m}, func(ep *intake.Endpoint) { ep.MaxBodyBytes = 8 << 10 })
	other := e.addEndpoint(t, "globex", 1024)

	first := newStalledBody(randomBody(t, 8<<10))
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- e.send(first, 8<<10) }()
	<-first.reading
	if held := budget.Held(e.ep.OrgID); held != 8<<10 {
		t.Fatalf("a body of 8 KiB being read holds %d bytes, want its length", held)
	}

	w := e.send(bytes.NewReader(randomBody(t, 8<<10)), 8<<10)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("a second 8 KiB body of the org: status %d (Retry-After %q), want 503 with Retry-After 1", w.Code, w.Header().Get("Retry-After"))
	}
	assertAnswerRevealsNothing(t, w, e)
	if n := testutil.ToFloat64(m.IngressRequests.WithLabelValues("body_memory")); n != 1 {
		t.Fatalf("counted %v body_memory refusals, want 1", n)
	}
	if w := e.post("/webhooks/"+other, strings.NewReader(`{"small":true}`), nil); w.Code != http.StatusOK {
		t.Fatalf("another org's small body beside it: status %d, want 200", w.Code)
	}

	close(first.resume)
	if w := <-done; w.Code != http.StatusOK {
		t.Fatalf("the first body: status %d", w.Code)
	}
	if held := budget.Held(""); held != 0 {
		t.Fatalf("%d bytes still held after every request ended", held)
	}
	if n := len(e.stored(t)); n != 2 {
		t.Fatalf("%d messages stored, want the first body and the other org's", n)
	}
}

// cutBody fails after its first bytes, as a client going away does.
type cutBody struct{ sent bool }

func (c *cutBody) Read(p []byte) (int, error) {
	if c.sent {
		return 0, errors.New("connection reset by peer")
	}
	c.sent = true
	return copy(p, "{\"cut\":"), nil
}

// heldAtRead records what its org holds of the body memory when ingress
// first reads it: the charge, taken before a byte is read.
type heldAtRead struct {
	r      io.Reader
	budget *fair.Budget
	org    string
	held   int64
	read   bool
}

func (h *heldAtRead) Read(p []byte) (int, error) {
	if !h.read {
		h.read, h.held = true, h.budget.Held(h.org)
	}
	return h.r.Read(p)
}

// Each body is charged before it is read what its in-memory read may take
// (its length, or the in-memory limit and one byte when it is unknown;
// no more than the first part of a body that streams to object storage),
// and gives it back whatever its answer, on both stores.
func TestEveryBodyIsChargedBeforeItIsReadAndGivesItsMemoryBackWhateverItsAnswer(t *testing.T) {
	for name, open := range testkit.Stores {
		t.Run(name, func(t *testing.T) {
			budget := &fair.Budget{What: "body memory", Total: 1 << 20}
			cfg := ingress.Config{BodyMemory: budget, Blobs: &blob.Memory{}, BlobThreshold: 1024}
			e := setupOn(t, open(t), cfg, func(ep *intake.Endpoint) { ep.MaxBodyBytes = 64 << 10 })
			cfg.Store, cfg.Clock = failingStore{e.store}, e.clock
			broken := http.NewServeMux()
			broken.Handle("/webhooks/{token}", ingress.New(cfg))
			for _, c := range []struct {
				name   string
				body   io.Reader
				length int64
				mux    *http.ServeMux
				status int
				held   int64
			}{
				{"small", strings.NewReader(`{"small":true}`), 14, e.mux, http.StatusOK, 14},
				{"small, chunked", unsized{strings.NewReader(`{"small":true}`)}, -1, e.mux, http.StatusOK, 1025},
				{"streamed to object storage", bytes.NewReader(randomBody(t, 40<<10)), 40 << 10, e.mux, http.StatusOK, 1025},
				{"past the limit while streaming", unsized{bytes.NewReader(randomBody(t, 64<<10+1))}, -1, e.mux, http.StatusRequestEntityTooLarge, 1025},
				{"cut off", &cutBody{}, -1, e.mux, http.StatusBadRequest, 1025},
				{"not committed", strings.NewReader(`{"lost":true}`), 13, broken, http.StatusServiceUnavailable, 13},
			} {
				body := &heldAtRead{r: c.body, budget: budget, org: e.ep.OrgID}
				r := httptest.NewRequest("POST", "/webhooks/"+e.token, body)
				r.ContentLength = c.length
				w := httptest.NewRecorder()
				c.mux.ServeHTTP(w, r)
				if w.Code != c.status {
					t.Errorf("%s: status %d, want %d", c.name, w.Code, c.status)
				}
				if body.held != c.held {
					t.Errorf("%s: held %d bytes when read, want %d", c.name, body.held, c.held)
				}
				if held := budget.Held(""); held != 0 {
					t.Errorf("%s: %d bytes still held after the request ended", c.name, held)
				}
			}
		})
	}
}

// The server's --max-body-bytes caps every endpoint, one stored with more
// before it was set included: a body declared longer is refused before a
// byte of it is read, one that runs past it is read no further than one
// byte beyond, and a body within it is taken.
func TestABodyOverTheServersCapIs413WithNothingReadWhateverItsEndpointAllows(t *testing.T) {
	e := setup(t, ingress.Config{MaxBodyBytes: 1024}, func(ep *intake.Endpoint) { ep.MaxBodyBytes = 64 << 10 })
	declared := &countingReader{r: bytes.NewReader(randomBody(t, 2000))}
	if w := e.send(declared, 2000); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("declared 2000 bytes over a cap of 1024: status %d, want 413", w.Code)
	}
	if declared.n != 0 {
		t.Fatalf("read %d bytes of a body declared over the server's cap", declared.n)
	}
	chunked := &countingReader{r: bytes.NewReader(randomBody(t, 2000))}
	if w := e.send(chunked, -1); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("2000 bytes chunked over a cap of 1024: status %d, want 413", w.Code)
	}
	if chunked.n > 1025 {
		t.Fatalf("read %d bytes of a chunked body over the server's cap of 1024", chunked.n)
	}
	if n := len(e.stored(t)); n != 0 {
		t.Fatalf("%d messages stored of bodies over the cap", n)
	}
	if w := e.send(bytes.NewReader(randomBody(t, 1024)), 1024); w.Code != http.StatusOK {
		t.Fatalf("a body at the cap: status %d", w.Code)
	}
}
