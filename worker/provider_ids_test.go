package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/intakehq/intake"
)

// A provider event id with bytes a database's text refuses or changes (a
// NUL, invalid UTF-8) is stored as valid text, the same for every delivery
// of it: the message settles, and the provider's retry is a duplicate.
func TestAProviderEventIDOfAnyBytesSettlesAndItsRetryIsADuplicate(t *testing.T) {
	e := setup(t)
	const raw = "evt_\xff\x00\xfe1"
	receive := func() string {
		body := `{"type":"paid"}`
		sum := sha256.Sum256([]byte(body))
		m := &intake.Message{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: e.conn.ID, EndpointID: e.ep.ID,
			Method: "POST", Header: http.Header{"X-Test-Secret": {"new-secret"}, "X-Test-Id": {raw}}, Body: []byte(body),
			Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
			MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
		if err := e.store.Ingest(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	first := receive()
	e.run(t)
	m := e.message(t, first)
	if m.State != intake.MessageProcessed || len(m.EventIDs) != 1 {
		t.Fatalf("first delivery: %s (%s %s) with %d events, want processed with 1", m.State, m.ErrorCode, m.ErrorMessage, len(m.EventIDs))
	}
	ev, err := e.store.Event(context.Background(), intake.Scope{OrgID: e.ep.OrgID}, m.EventIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if id := ev.ProviderEventID; !utf8.ValidString(id) || id != "evt_\uFFFD\uFFFD\uFFFD1" {
		t.Fatalf("stored provider event id %q, want the bytes a database refuses as U+FFFD", id)
	}
	again := receive()
	e.run(t)
	if m := e.message(t, again); m.State != intake.MessageIgnored || m.Outcome != intake.OutcomeDuplicate {
		t.Fatalf("the retry: %s (%s, %s %s), want ignored as a duplicate", m.State, m.Outcome, m.ErrorCode, m.ErrorMessage)
	}
}
