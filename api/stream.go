package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/bodyurl"
)

// Stream timing. Event ids are UUIDv7, so "newer than the last id" is a
// string comparison; but a worker makes an event's id before its
// transaction commits, so an event can become visible after a newer one was
// sent. Each poll therefore looks back streamOverlap behind the newest id
// and remembers what it sent there.
const (
	streamOverlap   = 5 * time.Second
	streamPoll      = 2 * time.Second  // fallback when no wake-up arrives
	streamHeartbeat = 15 * time.Second // keeps proxies from closing an idle stream
	streamRetry     = time.Second      // the reconnect delay a client is told
	streamBacklog   = 24 * time.Hour   // how far back a resume may reach
	streamPage      = 200
	// streamMinPoll spaces the polls of one stream when wake-ups come
	// thick: each poll reads the newest events, so a busy system costs a
	// stream at most a few reads a second.
	streamMinPoll = 250 * time.Millisecond
)

// streamEvents serves GET /api/v1/events/stream: the scope's events as they
// commit, as Server-Sent Events, each an `id:` line (the event id) and a
// `data:` line holding the envelope a consumer would receive. A client
// resumes with Last-Event-ID (or ?after=): events committed since, and any
// of the few seconds before it, are sent, so delivery is at least once and
// clients deduplicate on the id, as consumers do.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	q := r.URL.Query()
	if err := control.CheckParams(q, "endpoint_id", "after"); err != nil {
		return err
	}
	t := &eventTail{ctl: s.ctl, who: who, sent: map[string]int64{}}
	if id := q.Get("endpoint_id"); id != "" {
		if err := intake.CheckID("endpoint_id", id); err != nil {
			return err
		}
		ep, err := s.ctl.Endpoint(r.Context(), who, id)
		if err != nil {
			return err
		}
		t.endpointID, t.connectionID = ep.ID, ep.ConnectionID
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = q.Get("after")
	}
	// Ids carry the wall clock of the process that made them, so the
	// stream's horizon is judged by the wall clock too, not s.clock.
	now := time.Now()
	if after != "" {
		if err := intake.CheckID("after", after); err != nil {
			return err
		}
		t.newest = max(idMillis(after), now.Add(-streamBacklog).UnixMilli())
		t.sent[after] = idMillis(after)
	} else {
		// A fresh stream starts now: what is already stored is history.
		t.newest = now.UnixMilli()
		if _, err := t.poll(r.Context()); err != nil {
			return err
		}
	}

	rc := http.NewResponseController(w)
	// A stream outlives the server's write timeout; heartbeats notice a
	// client that went away. Not every ResponseWriter has deadlines, and
	// the stream works without.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", streamRetry.Milliseconds()); err != nil {
		return nil
	}
	if rc.Flush() != nil {
		return nil
	}

	wake, stop := s.wakes.Listen(intake.TopicEvents)
	defer stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	heartbeat := time.NewTicker(streamHeartbeat)
	defer heartbeat.Stop()
	for {
		events, err := t.poll(r.Context())
		if err != nil {
			// The stream has begun: the client learns of the failure by
			// the stream ending, and resumes from its last id.
			if r.Context().Err() == nil {
				s.log.Error("event stream", "err", err)
			}
			return nil
		}
		for _, e := range events {
			if err := writeStreamEvent(w, e, s.bodyURLs, s.clock.Now()); err != nil {
				return nil
			}
		}
		if len(events) > 0 && rc.Flush() != nil {
			return nil
		}
		polled := time.Now()
		select {
		case <-s.closing:
			return nil
		case <-r.Context().Done():
			return nil
		case <-wake:
		case <-poll.C:
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		}
		select {
		case <-r.Context().Done():
			return nil
		case <-time.After(streamMinPoll - time.Since(polled)):
		}
	}
}

// writeStreamEvent writes one event as an SSE message. A truncated event
// carries a fresh raw-body address, as a consumer delivery does.
func writeStreamEvent(w http.ResponseWriter, e intake.Event, signer bodyurl.Signer, now time.Time) error {
	env := intake.NewEnvelope(&e)
	if e.DataTruncated {
		env.BodyURL = signer.URL(e.MessageID, now.Add(bodyurl.TTL))
	}
	data, err := json.Marshal(env) // one line: JSON escapes newlines in strings
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %s\ndata: %s\n\n", e.ID, data)
	return err
}

// eventTail finds the events of a scope (and endpoint) committed since its
// last poll, oldest first.
type eventTail struct {
	ctl          *control.Plane
	who          control.Caller
	endpointID   string
	connectionID string
	// newest is the time (unix ms) of the newest id seen; sent holds the ids
	// seen within streamOverlap of it.
	newest int64
	sent   map[string]int64
	// endpoints caches which endpoint each message came in at.
	endpoints map[string]string
}

// poll returns the events not seen before, oldest first, and marks them seen.
func (t *eventTail) poll(ctx context.Context) ([]intake.Event, error) {
	floor := floorID(t.newest - streamOverlap.Milliseconds())
	var fresh []intake.Event
	f := intake.EventFilter{Limit: streamPage}
	for {
		page, err := t.ctl.Events(ctx, t.who, f)
		if err != nil {
			return nil, err
		}
		below := false
		for _, e := range page.Items {
			if e.ID < floor {
				below = true
				break
			}
			if _, seen := t.sent[e.ID]; !seen {
				fresh = append(fresh, e)
			}
		}
		if below || page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	slices.Reverse(fresh)
	out := fresh[:0]
	for _, e := range fresh {
		ms := idMillis(e.ID)
		t.sent[e.ID] = ms
		t.newest = max(t.newest, ms)
		ok, err := t.wanted(ctx, e)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	for id, ms := range t.sent {
		if ms < t.newest-streamOverlap.Milliseconds() {
			delete(t.sent, id)
		}
	}
	return out, nil
}

// wanted reports whether an event belongs to the stream's endpoint: events
// name their connection, and their message names the endpoint.
func (t *eventTail) wanted(ctx context.Context, e intake.Event) (bool, error) {
	if t.endpointID == "" {
		return true, nil
	}
	if e.ConnectionID != t.connectionID {
		return false, nil
	}
	if t.endpoints == nil || len(t.endpoints) > 10_000 {
		t.endpoints = map[string]string{}
	}
	ep, ok := t.endpoints[e.MessageID]
	if !ok {
		m, err := t.ctl.Message(ctx, t.who, e.MessageID)
		if intake.ErrorCode(err) == intake.ENOTFOUND {
			return false, nil // deleted by retention since
		}
		if err != nil {
			return false, err
		}
		ep = m.EndpointID
		t.endpoints[e.MessageID] = ep
	}
	return ep == t.endpointID, nil
}

// idMillis is the creation time (unix ms) a UUIDv7 carries in its first 48
// bits; 0 for anything else.
func idMillis(id string) int64 {
	if len(id) < 13 {
		return 0
	}
	ms, err := strconv.ParseInt(strings.Replace(id[:13], "-", "", 1), 16, 64)
	if err != nil {
		return 0
	}
	return ms
}

// floorID is the smallest UUIDv7 of millisecond ms, so every id made at or
// after ms compares greater or equal.
func floorID(ms int64) string {
	ms = max(ms, 0)
	return fmt.Sprintf("%08x-%04x-0000-0000-000000000000", ms>>16, ms&0xffff)
}
