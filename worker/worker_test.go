package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

// testAdapter is a provider whose behaviour the body controls: the
// X-Test-Secret header must equal one of the secrets; the JSON body names
// the event id and type, and can ask for a transient or permanent failure,
// or for Many events.
type testAdapter struct {
	mu        sync.Mutex
	transient int    // fail transiently this many more times
	unsure    int    // fail verifying transiently this many more times
	lastURL   string // the public URL the last verified request carried
	lastOrg   string // the org the last verified request was budgeted to
}

func (*testAdapter) Name() string                         { return "worker-test" }
func (*testAdapter) ValidateConfig(provider.Config) error { return nil }

func (a *testAdapter) Verify(r *provider.Request, secrets [][]byte, _ provider.Config) error {
	a.mu.Lock()
	a.lastURL, a.lastOrg = r.URL, r.Org
	if bytes.Contains(r.Body, []byte(`"verify":"unsure"`)) && a.unsure != 0 {
		a.unsure--
		a.mu.Unlock()
		// As a provider whose keys could not be fetched says it.
		return provider.Transient("the provider's keys could not be fetched")
	}
	a.mu.Unlock()
	// A URL-signing provider's signature covers the URL it was given.
	if signed := r.Header.Get("X-Test-URL"); signed != "" && signed != r.URL {
		return fmt.Errorf("%w: signed for another URL", provider.ErrSignature)
	}
	for _, s := range secrets {
		if bytes.Equal([]byte(r.Header.Get("X-Test-Secret")), s) {
			return nil
		}
	}
	return fmt.Errorf("%w: no secret matched", provider.ErrSignature)
}

func (a *testAdapter) Interpret(r *provider.Request, _ provider.Config) (provider.Interpretation, error) {
	var body struct {
		ID, Type, Fail string
		Many           int
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return provider.Interpretation{}, provider.Permanent("body is not JSON")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if body.Fail == "transient" && a.transient != 0 {
		a.transient--
		return provider.Interpretation{}, fmt.Errorf("upstream lookup timed out")
	}
	typ := "worker-test." + body.Type
	if body.Many > 0 {
		var in provider.Interpretation
		for i := range body.Many {
			in.Events = append(in.Events, provider.EventSpec{ProviderEventID: fmt.Sprint(body.ID, i), Type: typ, Data: json.RawMessage(`{}`)})
		}
		return in, nil
	}
	if id := r.Header.Get("X-Test-ID"); id != "" {
		body.ID = id // as a provider may send it: any bytes
	}
	return provider.Interpretation{ProviderEventID: body.ID, EventType: typ, Kind: intake.KindEvent,
		Events: []provider.EventSpec{{ProviderEventID: body.ID, Type: typ, Data: r.Body, ObjectIDs: []string{body.ID}}}}, nil
}

var adapter = &testAdapter{}

func init() { provider.Register(adapter) }

type env struct {
	store  *sqlite.Store
	sealer *seal.Sealer
	clock  *testkit.Clock
	w      *worker.Worker
	conn   intake.Connection
	ep     intake.Endpoint
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sealer := testkit.Sealer(t)
	e := &env{store: s, sealer: sealer, clock: testkit.NewClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: e.clock.Now()}
	e.conn = intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "worker-test", Name: "t", CreatedAt: e.clock.Now()}
	// Two active secrets, as during a rotation.
	e.conn.SealedSecrets, _ = sealer.SealSecrets([]string{"old-secret", "new-secret"}, []byte(e.conn.ID))
	e.ep = intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: e.conn.ID, TokenHash: []byte(e.conn.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	e.ep.SealedToken = sealer.Seal([]byte("tok123"), []byte(e.ep.ID))
	for _, err := range []error{s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(org.ID)}), s.CreateConnection(ctx, e.conn), s.CreateEndpoint(ctx, e.ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	e.conn.Version, e.ep.Version = 1, 1 // as every row starts
	e.w = worker.New(worker.Config{Store: s, Sealer: sealer, Clock: e.clock, PublicURL: "https://hooks.example.com/",
		Backoff: intake.Backoff{Base: 10 * time.Second}, Rules: testkit.Rules(t)})
	return e
}

func (e *env) receive(t *testing.T, secret, body string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	m := &intake.Message{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: e.conn.ID, EndpointID: e.ep.ID,
		Method: "POST", Header: http.Header{"X-Test-Secret": {secret}}, Body: []byte(body),
		Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
		MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func (e *env) run(t *testing.T) int {
	t.Helper()
	n, err := e.w.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) message(t *testing.T, id string) intake.Message {
	t.Helper()
	m, err := e.store.Message(context.Background(), intake.Scope{}, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBadSignatureIsIgnoredWithNoEvent(t *testing.T) {
	e := setup(t)
	id := e.receive(t, "wrong", `{"id":"evt_1","type":"paid"}`)
	e.run(t)
	m := e.message(t, id)
	if m.State != intake.MessageIgnored || m.Outcome != intake.OutcomeSignature || len(m.EventIDs) != 0 {
		t.Fatalf("message = %+v", m)
	}
}

func TestEitherRotatedSecretVerifiesAndMakesAnEvent(t *testing.T) {
	e := setup(t)
	a := e.receive(t, "old-secret", `{"id":"evt_1","type":"paid"}`)
	b := e.receive(t, "new-secret", `{"id":"evt_2","type":"paid"}`)
	e.run(t)
	for _, id := range []string{a, b} {
		m := e.message(t, id)
		if m.State != intake.MessageProcessed || len(m.EventIDs) != 1 {
			t.Fatalf("message = %+v", m)
		}
		ev, err := e.store.Event(context.Background(), intake.Scope{}, m.EventIDs[0])
		if err != nil || ev.Type != "worker-test.paid" || ev.State != intake.EventPending || ev.MessageID != id {
			t.Fatalf("event = %+v %v", ev, err)
		}
	}
}

func TestDeduplicationByProviderIDAndConflict(t *testing.T) {
	e := setup(t)
	first := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid"}`)
	e.run(t)
	repeat := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid"}`)
	changed := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid","amount":2}`)
	e.run(t)
	newID := e.receive(t, "new-secret", `{"id":"evt_9","type":"paid"}`)
	e.run(t)
	for id, want := range map[string][2]string{
		first:   {"processed", "events"},
		repeat:  {"ignored", "duplicate"},
		changed: {"ignored", "conflict"},
		newID:   {"processed", "events"},
	} {
		m := e.message(t, id)
		if string(m.State) != want[0] || m.Outcome != want[1] {
			t.Errorf("message %s: %s/%s, want %s/%s", id, m.State, m.Outcome, want[0], want[1])
		}
	}
}

func TestSameBodyWithoutProviderIDIsDuplicateWithinADay(t *testing.T) {
	e := setup(t)
	a := e.receive(t, "new-secret", `{"type":"ping"}`)
	e.run(t)
	e.clock.Advance(23 * time.Hour)
	b := e.receive(t, "new-secret", `{"type":"ping"}`)
	e.run(t)
	e.clock.Advance(2 * time.Hour)
	c := e.receive(t, "new-secret", `{"type":"ping"}`)
	e.run(t)
	if m := e.message(t, a); m.State != intake.MessageProcessed {
		t.Fatalf("first = %s", m.State)
	}
	if m := e.message(t, b); m.Outcome != intake.OutcomeDuplicate {
		t.Fatalf("within a day = %s/%s", m.State, m.Outcome)
	}
	if m := e.message(t, c); m.State != intake.MessageProcessed {
		t.Fatalf("after a day = %s/%s", m.State, m.Outcome)
	}
}

func TestTransientFailureRetriesOnScheduleAndTheSixthIsDead(t *testing.T) {
	e := setup(t)
	adapter.mu.Lock()
	adapter.transient = -1 // always
	adapter.mu.Unlock()
	defer func() { adapter.mu.Lock(); adapter.transient = 0; adapter.mu.Unlock() }()
	id := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid","fail":"transient"}`)
	for attempt := 1; attempt <= 5; attempt++ {
		if n := e.run(t); n != 1 {
			t.Fatalf("attempt %d: claimed %d", attempt, n)
		}
		m := e.message(t, id)
		if m.State != intake.MessageFailed || m.Attempt != attempt || m.ErrorCode != intake.ErrCodeTransient {
			t.Fatalf("after attempt %d: %+v", attempt, m)
		}
		want := 10 * time.Second
		for range attempt - 1 {
			want *= 4
		}
		if got := m.NextAttemptAt.Sub(e.clock.Now()); got != want {
			t.Fatalf("attempt %d: next in %v, want %v", attempt, got, want)
		}
		e.clock.Advance(want - time.Millisecond)
		if n := e.run(t); n != 0 {
			t.Fatalf("attempt %d retried early", attempt)
		}
		e.clock.Advance(time.Millisecond)
	}
	e.run(t)
	m := e.message(t, id)
	if m.State != intake.MessageDead || m.Attempt != 6 || m.ErrorMessage != "upstream lookup timed out" {
		t.Fatalf("after the sixth attempt: %+v", m)
	}
}

// A signature that could not be judged (the provider's keys could not be
// fetched) is neither refused nor dead: the message is tried again on the
// retry schedule, and verifies once the keys can be read.
func TestAVerifyThatCannotJudgeNowIsRetriedLater(t *testing.T) {
	e := setup(t)
	adapter.mu.Lock()
	adapter.unsure = 1
	adapter.mu.Unlock()
	defer func() { adapter.mu.Lock(); adapter.unsure = 0; adapter.mu.Unlock() }()
	id := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid","verify":"unsure"}`)
	e.run(t)
	m := e.message(t, id)
	if m.State != intake.MessageFailed || m.Attempt != 1 || m.ErrorCode != intake.ErrCodeTransient ||
		m.ErrorMessage != "the provider's keys could not be fetched" || !m.NextAttemptAt.Equal(e.clock.Now().Add(10*time.Second)) {
		t.Fatalf("after the first attempt: %+v", m)
	}
	e.clock.Advance(10 * time.Second)
	e.run(t)
	if m := e.message(t, id); m.State != intake.MessageProcessed || len(m.EventIDs) != 1 {
		t.Fatalf("after the keys could be read: %+v", m)
	}
}

func TestTransientFailureThatRecoversIsProcessed(t *testing.T) {
	e := setup(t)
	adapter.mu.Lock()
	adapter.transient = 2
	adapter.mu.Unlock()
	id := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid","fail":"transient"}`)
	for range 3 {
		e.run(t)
		e.clock.Advance(time.Hour)
	}
	if m := e.message(t, id); m.State != intake.MessageProcessed || m.Attempt != 3 || len(m.EventIDs) != 1 {
		t.Fatalf("message = %+v", m)
	}
}

func TestPermanentFailureIsDeadAtOnce(t *testing.T) {
	e := setup(t)
	id := e.receive(t, "new-secret", `not json`)
	e.run(t)
	m := e.message(t, id)
	if m.State != intake.MessageDead || m.Attempt != 1 || m.ErrorCode != intake.ErrCodePermanent {
		t.Fatalf("message = %+v", m)
	}
}

func TestExpiredLeaseOnTheLastAttemptEndsDead(t *testing.T) {
	e := setup(t)
	id := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid"}`)
	// Six attempts claimed and abandoned (their process died).
	for range 6 {
		if _, err := e.store.ClaimMessages(context.Background(), e.clock.Now(), time.Minute, 10); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
	}
	e.run(t)
	if m := e.message(t, id); m.State != intake.MessageDead || m.ErrorCode != intake.ErrCodeLeaseExpired {
		t.Fatalf("message = %+v", m)
	}
}

func TestTwoWorkersRacingSettleEachMessageOnce(t *testing.T) {
	e := setup(t)
	var ids []string
	for i := range 40 {
		ids = append(ids, e.receive(t, "new-secret", fmt.Sprintf(`{"id":"evt_%d","type":"paid"}`, i)))
	}
	other := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Batch: 5})
	var wg sync.WaitGroup
	for _, w := range []*worker.Worker{e.w, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := w.RunOnce(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	page, _ := e.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{Limit: 500})
	if len(page.Items) != len(ids) {
		t.Fatalf("%d events for %d messages", len(page.Items), len(ids))
	}
	for _, id := range ids {
		if m := e.message(t, id); m.State != intake.MessageProcessed || m.Attempt != 1 || len(m.EventIDs) != 1 {
			t.Fatalf("message = %+v", m)
		}
	}
}

func TestRunWakesOnIngestWithoutWaitingForThePoll(t *testing.T) {
	e := setup(t)
	w := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Poll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	settled, stop := e.store.Listen(intake.TopicEvents)
	defer stop()
	e.receive(t, "new-secret", `{"id":"evt_1","type":"paid"}`)
	select {
	case <-settled:
	case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("worker did not wake on ingest (poll is an hour)")
	}
	cancel()
	<-done
}

// An adapter sees the public URL the provider signed, and the org whose
// message it verifies, by which what it fetches is budgeted.
func TestAdaptersSeeThePublicURLTheProviderWasGiven(t *testing.T) {
	e := setup(t)
	sum := sha256.Sum256([]byte(`{"id":"evt_1"}`))
	m := &intake.Message{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: e.conn.ID, EndpointID: e.ep.ID,
		Method: "POST", Query: "a=1&b=2", Header: http.Header{"X-Test-Secret": {"new-secret"}}, Body: []byte(`{"id":"evt_1"}`),
		Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
		MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	e.run(t)
	adapter.mu.Lock()
	got, org := adapter.lastURL, adapter.lastOrg
	adapter.mu.Unlock()
	if got != "https://hooks.example.com/webhooks/tok123?a=1&b=2" {
		t.Fatalf("adapter saw URL %q", got)
	}
	if org != e.ep.OrgID {
		t.Fatalf("adapter saw org %q, want the message's %q", org, e.ep.OrgID)
	}
}

// flakySettle fails settlements that would create events, as a subject
// lookup that times out would.
type flakySettle struct{ *sqlite.Store }

func (f flakySettle) SettleMessage(ctx context.Context, now time.Time, s intake.Settlement) (intake.Settled, error) {
	if len(s.Events) > 0 {
		return intake.Settled{}, fmt.Errorf("subject lookup timed out")
	}
	return f.Store.SettleMessage(ctx, now, s)
}

func TestResultThatCannotCommitIsATransientFailure(t *testing.T) {
	e := setup(t)
	w := worker.New(worker.Config{Store: flakySettle{e.store}, Sealer: e.sealer, Clock: e.clock,
		Backoff: intake.Backoff{Base: 10 * time.Second}})
	id := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid"}`)
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := e.message(t, id)
	if m.State != intake.MessageFailed || m.ErrorCode != intake.ErrCodeTransient || !m.NextAttemptAt.Equal(e.clock.Now().Add(10*time.Second)) {
		t.Fatalf("message = %+v", m)
	}
	e.clock.Advance(10 * time.Second)
	e.run(t) // the healthy store commits the retry
	if m := e.message(t, id); m.State != intake.MessageProcessed || m.Attempt != 2 {
		t.Fatalf("retry = %s attempt %d", m.State, m.Attempt)
	}
}

func TestASecretAddedMomentsAgoVerifiesDespiteTheRowCache(t *testing.T) {
	e := setup(t)
	first := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid"}`)
	e.run(t) // caches the connection row
	sealed, _ := e.sealer.SealSecrets([]string{"new-secret", "newest-secret"}, []byte(e.conn.ID))
	if err := e.store.ReplaceConnectionSecrets(context.Background(), intake.Scope{}, e.conn.ID, sealed); err != nil {
		t.Fatal(err)
	}
	second := e.receive(t, "newest-secret", `{"id":"evt_2","type":"paid"}`)
	e.run(t) // same instant: the cached row is still fresh
	for _, id := range []string{first, second} {
		if m := e.message(t, id); m.State != intake.MessageProcessed {
			t.Fatalf("message %s: %s/%s", id, m.State, m.Outcome)
		}
	}
	forged := e.receive(t, "never-a-secret", `{"id":"evt_3","type":"paid"}`)
	e.run(t)
	if m := e.message(t, forged); m.Outcome != intake.OutcomeSignature {
		t.Fatalf("forged: %s/%s", m.State, m.Outcome)
	}
}

// A URL-signing provider still posting to the URL a rotation replaced
// signs that URL: within the overlap its messages verify against it, and
// after the overlap they do not.
func TestAMessageSentToARotatedURLWithinTheOverlapVerifiesAgainstThatURL(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	oldURL, newURL := "https://hooks.example.com/webhooks/tok123", "https://hooks.example.com/webhooks/tok456"
	rotated, err := e.ep.RotateToken([]byte("new-hash"), e.sealer.Seal([]byte("tok456"), []byte(e.ep.ID)), e.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.RotateEndpointToken(ctx, intake.Scope{}, rotated); err != nil {
		t.Fatal(err)
	}
	signedFor := func(url, id string) string {
		t.Helper()
		sum := sha256.Sum256([]byte(id))
		m := &intake.Message{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: e.conn.ID, EndpointID: e.ep.ID,
			Method: "POST", Header: http.Header{"X-Test-Secret": {"new-secret"}, "X-Test-Url": {url}},
			Body: []byte(`{"id":"` + id + `"}`), Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
			MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
		if err := e.store.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	toOld, toNew := signedFor(oldURL, "evt_old"), signedFor(newURL, "evt_new")
	e.run(t)
	for _, id := range []string{toOld, toNew} {
		if m := e.message(t, id); m.State != intake.MessageProcessed {
			t.Fatalf("within the overlap: %s %s %s", m.State, m.Outcome, m.ErrorMessage)
		}
	}
	e.clock.Advance(time.Hour)
	late := signedFor(oldURL, "evt_late")
	e.run(t)
	if m := e.message(t, late); m.State != intake.MessageIgnored || m.Outcome != intake.OutcomeSignature {
		t.Fatalf("signed for the replaced URL after the overlap: %s %s, want ignored for its signature", m.State, m.Outcome)
	}
}
