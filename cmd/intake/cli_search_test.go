package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// settled stores a message of body processed into one event of typ with
// data, as a worker would, and returns the event.
func (s server) settled(t *testing.T, org api.Org, conn api.Connection, ep api.Endpoint, typ, body, data string) intake.Event {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	sum := sha256.Sum256([]byte(body))
	m := intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{}, Body: []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: now.Add(-time.Minute),
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now.Add(-time.Minute)}
	if err := s.store.Ingest(ctx, &m); err != nil {
		t.Fatal(err)
	}
	claims, err := s.store.ClaimMessages(ctx, now, time.Minute, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %+v %v", claims, err)
	}
	ev := intake.Event{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, MessageID: m.ID, Provider: "none", Type: typ,
		Kind: intake.KindEvent, ProviderEventID: "evt_" + m.ID, OccurredAt: now, ReceivedAt: now, Data: json.RawMessage(data),
		State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now, CreatedAt: now}
	if _, err := s.store.SettleMessage(ctx, now, intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt, To: intake.MessageProcessed,
		Outcome: intake.OutcomeEvents, ProviderEventID: ev.ProviderEventID, Events: []intake.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestCLISearchesEventsAndMessagesAndActsOnWhatItFinds(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	hit := s.settled(t, org, conn, ep, "shop.order.paid", `order 1 for Ann`, `{"customer":{"id":"cus_1"},"total":30}`)
	miss := s.settled(t, org, conn, ep, "shop.order.paid", `order 2 for Bob`, `{"customer":{"id":"cus_2"},"total":30}`)

	out := s.mustRun(t, org.APIKey, "events", "search", "--match", `{"customer":{"id":"cus_1"}}`, "--since", "1h")
	if !strings.Contains(out, hit.ID) || strings.Contains(out, miss.ID) || !strings.Contains(out, "shop.order.paid") {
		t.Fatalf("events search --match:\n%s", out)
	}
	list := decodeOut[api.List[api.Event]](t, s.mustRunJSON(t, org.APIKey, "events", "search", "--q", "CUS_", "--type", "shop.order.paid", "--limit", "1"))
	if len(list.Items) != 1 || list.Items[0].ID != miss.ID || list.NextCursor == "" {
		t.Fatalf("events search --q --limit 1: %+v", list)
	}
	if out := s.mustRun(t, org.APIKey, "messages", "search", "--q", "ann"); !strings.Contains(out, hit.MessageID) || strings.Contains(out, miss.MessageID) {
		t.Fatalf("messages search --q:\n%s", out)
	}
	if _, err := s.run(t, org.APIKey, "messages", "search", "--match", `{"customer":`, "--replay"); err == nil || !strings.Contains(err.Error(), "--match must be a JSON object") {
		t.Fatalf("a malformed --match to replay: %v", err)
	}
	if _, err := s.run(t, org.APIKey, "events", "search", "--match", `["cus_1"]`); err == nil || !strings.Contains(err.Error(), "match must be a JSON object") {
		t.Fatalf("a --match that is not an object: %v", err)
	}
	if _, err := s.run(t, org.APIKey, "events", "search", "--until", "yesterday"); err == nil || !strings.Contains(err.Error(), "--until") {
		t.Fatalf("a malformed --until: %v", err)
	}

	if out := s.mustRun(t, org.APIKey, "messages", "search", "--match", `{"customer":{"id":"cus_1"}}`, "--replay"); out != "replayed 1 messages\n" {
		t.Fatalf("messages search --replay: %q", out)
	}
	queued := decodeOut[api.List[api.Message]](t, s.mustRunJSON(t, org.APIKey, "messages", "list", "--state", "queued"))
	if len(queued.Items) != 1 || queued.Items[0].ReplayOf != hit.MessageID {
		t.Fatalf("after the replay, queued: %+v", queued.Items)
	}
	// Nothing re-routable yet: both events are pending.
	if out := s.mustRun(t, org.APIKey, "events", "search", "--q", "cus_1", "--reroute"); out != "re-routed 0 events\n" {
		t.Fatalf("events search --reroute: %q", out)
	}
}

func TestCLIBulkReplayPastTheBulkMaxNeedsConfirmAndFollowsTheJob(t *testing.T) {
	s := newServerWith(t, 1)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	for i := range 3 {
		s.settled(t, org, conn, ep, "shop.order.paid", fmt.Sprintf("order %d", i), `{"total":30}`)
	}
	_, err := s.run(t, org.APIKey, "messages", "search", "--type", "shop.order.paid", "--replay")
	if err == nil || !strings.Contains(err.Error(), "selects 3 messages") || !strings.Contains(err.Error(), "confirm") {
		t.Fatalf("a replay of 3 past --bulk-max 1: %v, want it refused naming the count and confirm", err)
	}
	out, stderr, err := s.runWithStderr(t, org.APIKey, "messages", "search", "--type", "shop.order.paid", "--replay", "--confirm", "--wait")
	if err != nil || !strings.Contains(out, "bulk replay") || !strings.Contains(out, "done: 3 of 3") || !strings.Contains(stderr, "3/3") {
		t.Fatalf("a confirmed replay of 3 with --wait: %q %q %v", out, stderr, err)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(out, "bulk replay "), " ")
	job := decodeOut[api.Replay](t, s.mustRunJSON(t, org.APIKey, "jobs", "show", id))
	if job.Kind != "replay" || job.State != "done" || job.Done != 3 || job.Total != 3 {
		t.Fatalf("jobs show %s: %+v", id, job)
	}
	// Within --bulk-max, a confirmed action runs at once, as without.
	if out := s.mustRun(t, org.APIKey, "events", "search", "--type", "shop.order.paid", "--reroute", "--confirm"); out != "re-routed 0 events\n" {
		t.Fatalf("a confirmed re-route within --bulk-max answered %q", out)
	}
}
