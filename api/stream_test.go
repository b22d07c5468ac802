package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// sse is one message read from an event stream.
type sse struct {
	id   string
	data string
}

// openStream connects to the event stream and returns the messages it
// sends; the stream closes when the test ends.
func openStream(t *testing.T, srv *httptest.Server, tok, query, lastID string) <-chan sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/events/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("stream answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sse, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var m sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m.id != "" {
					out <- m
				}
				m = sse{}
			case strings.HasPrefix(line, "id: "):
				m.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				m.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return out
}

// next waits for the stream's next message.
func next(t *testing.T, ch <-chan sse) sse {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return m
	case <-time.After(10 * time.Second): // a hang guard; events arrive in milliseconds
		t.Fatal("no event on the stream")
	}
	return sse{}
}

// quiet checks that the stream sends nothing more for a while.
func quiet(t *testing.T, ch <-chan sse) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("unexpected event on the stream: %+v", m)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestEventStreamSendsEventsCommittedAfterItOpensAsConsumerEnvelopes(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close) // after the streams close
	acme, other := e.newTenant("acme"), e.newTenant("other")
	e.event(acme, "apitest.before")

	stream := openStream(t, srv, acme.org.APIKey, "", "")
	e.event(other, "apitest.elsewhere")
	ev := e.event(acme, "apitest.invoice.paid")
	m := next(t, stream)
	if m.id != ev.ID {
		t.Fatalf("stream sent id %s, want %s", m.id, ev.ID)
	}
	var env intake.Envelope
	if err := json.Unmarshal([]byte(m.data), &env); err != nil {
		t.Fatalf("data is not an envelope: %v: %s", err, m.data)
	}
	if env.ID != ev.ID || env.Type != "apitest.invoice.paid" || env.OrgID != acme.org.ID || env.MessageID != ev.MessageID {
		t.Fatalf("envelope %+v", env)
	}
	quiet(t, stream)
}

func TestEventStreamResumesAfterLastEventID(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close) // after the streams close
	acme := e.newTenant("acme")
	seen := e.event(acme, "apitest.one")
	missed := e.event(acme, "apitest.two")

	stream := openStream(t, srv, acme.org.APIKey, "", seen.ID)
	if m := next(t, stream); m.id != missed.ID {
		t.Fatalf("resumed stream sent %s, want the missed %s", m.id, missed.ID)
	}
	later := e.event(acme, "apitest.three")
	if m := next(t, stream); m.id != later.ID {
		t.Fatalf("stream sent %s, want %s", m.id, later.ID)
	}

	// ?after= works as Last-Event-ID does, for clients that cannot set it.
	// Events of the few seconds before it come again (a late commit can
	// hide behind the last id); clients deduplicate on the id.
	byQuery := openStream(t, srv, acme.org.APIKey, "?after="+missed.ID, "")
	if got := []string{next(t, byQuery).id, next(t, byQuery).id}; got[0] != seen.ID || got[1] != later.ID {
		t.Fatalf("stream after %s sent %v, want %s again then %s", missed.ID, got, seen.ID, later.ID)
	}
	quiet(t, byQuery)
}

// idFrom is a well-formed id made at t: ids sort by the millisecond they
// were made in, which is held in their first 48 bits.
func idFrom(t time.Time) string {
	u := uuid.Must(uuid.NewV7())
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (8 * (5 - i)))
	}
	return u.String()
}

func TestEventStreamSendsAnEventThatCommitsBehindANewerOne(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close) // after the streams close
	acme := e.newTenant("acme")
	stream := openStream(t, srv, acme.org.APIKey, "", "")

	slow := idFrom(time.Now().Add(-time.Second)) // a worker made this id, then took its time to commit
	fast := e.event(acme, "apitest.fast")
	if m := next(t, stream); m.id != fast.ID {
		t.Fatalf("stream sent %s, want %s", m.id, fast.ID)
	}
	e.eventWithID(acme, slow, "apitest.slow")
	if m := next(t, stream); m.id != slow {
		t.Fatalf("stream sent %s, want the late %s", m.id, slow)
	}
	quiet(t, stream)
}

func TestEventStreamOfAnEndpointSendsOnlyItsEvents(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close) // after the streams close
	acme, other := e.newTenant("acme"), e.newTenant("other")
	second := acme
	second.ep = must[api.Endpoint](e, 201, "POST", "/api/v1/endpoints", acme.org.APIKey, api.CreateEndpointRequest{ConnectionID: acme.conn.ID})

	stream := openStream(t, srv, acme.org.APIKey, "?endpoint_id="+acme.ep.ID, "")
	e.event(second, "apitest.other_endpoint")
	mine := e.event(acme, "apitest.mine")
	if m := next(t, stream); m.id != mine.ID {
		t.Fatalf("stream sent %s, want %s", m.id, mine.ID)
	}
	quiet(t, stream)

	// Another org's endpoint does not exist for this key.
	wantError(t, e.do("GET", "/api/v1/events/stream?endpoint_id="+other.ep.ID, acme.org.APIKey, nil), 404, intake.ENOTFOUND, "")
	wantError(t, e.do("GET", "/api/v1/events/stream?after=nope", acme.org.APIKey, nil), 400, intake.EINVALID, "after")
	wantError(t, e.do("GET", "/api/v1/events/stream", "", nil), 401, intake.EUNAUTHORIZED, "")
}

func TestEventStreamWithTheStaffTokenSendsEveryOrgsEvents(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close) // after the streams close
	acme, other := e.newTenant("acme"), e.newTenant("other")
	stream := openStream(t, srv, staffToken, "", "")
	a := e.event(acme, "apitest.a")
	b := e.event(other, "apitest.b")
	got := map[string]bool{next(t, stream).id: true, next(t, stream).id: true}
	if !got[a.ID] || !got[b.ID] {
		t.Fatalf("staff stream sent %v, want %s and %s", got, a.ID, b.ID)
	}
}

// eventWithID makes an event as env.event does, with a given id.
func (e *env) eventWithID(tn tenant, id, typ string) {
	e.t.Helper()
	ctx := context.Background()
	m := e.ingest(tn, "", http.Header{}, `{"type":"`+typ+`"}`)
	claims, err := e.store.ClaimMessages(ctx, e.clock.Now(), time.Minute, 1)
	if err != nil || len(claims) != 1 {
		e.t.Fatalf("claim: %+v %v", claims, err)
	}
	now := e.clock.Now()
	ev := intake.Event{
		ID: id, OrgID: tn.org.ID, ConnectionID: tn.conn.ID, MessageID: m.ID, Provider: testProvider,
		Type: typ, Kind: intake.KindEvent, ProviderEventID: "evt_" + m.ID, OccurredAt: now, ReceivedAt: now,
		Data: []byte(`{}`), State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now, CreatedAt: now,
	}
	if _, err := e.store.SettleMessage(ctx, now, intake.Settlement{
		MessageID: m.ID, Attempt: claims[0].Attempt, To: intake.MessageProcessed, Outcome: intake.OutcomeEvents,
		ProviderEventID: ev.ProviderEventID, Events: []intake.Event{ev},
	}); err != nil {
		e.t.Fatal(err)
	}
}

func TestEventStreamOutlivesTheServersWriteTimeout(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewUnstartedServer(e.h)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close) // after the stream closes
	acme := e.newTenant("acme")
	stream := openStream(t, srv, acme.org.APIKey, "", "")
	time.Sleep(400 * time.Millisecond)
	ev := e.event(acme, "apitest.later")
	if m := next(t, stream); m.id != ev.ID {
		t.Fatalf("stream sent %s, want %s", m.id, ev.ID)
	}
}
