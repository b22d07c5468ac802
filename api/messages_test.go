package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestMessageShowHidesCredentialHeadersAndQueryParameters(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	m := e.ingest(acme, "a=1&hub.verify_token=meta-verify-secret&b=2&api_key=k-secret", http.Header{
		"Content-Type":         {"application/json"},
		"Authorization":        {"Bearer bearer-secret"},
		"Proxy-Authorization":  {"Basic proxy-secret"},
		"Cookie":               {"session=cookie-secret"},
		"X-Api-Key":            {"apikey-secret"},
		"X-Goog-Channel-Token": {"channel-secret"},
		"Stripe-Signature":     {"t=1,v1=abc"},
		"User-Agent":           {"Stripe/1.0"},
	}, `{"id":"evt_1"}`)
	rec := e.do("GET", "/api/v1/messages/"+m.ID, acme.org.APIKey, nil)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "-secret") {
		t.Fatalf("a credential is shown: %s", rec.Body)
	}
	got := must[api.MessageDetail](e, 200, "GET", "/api/v1/messages/"+m.ID, acme.org.APIKey, nil)
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "X-Goog-Channel-Token"} {
		if _, ok := got.Headers[h]; ok {
			t.Errorf("header %s is shown", h)
		}
	}
	if got.Headers.Get("Stripe-Signature") != "t=1,v1=abc" || got.Headers.Get("Content-Type") != "application/json" || got.Headers.Get("User-Agent") != "Stripe/1.0" {
		t.Errorf("ordinary headers are missing: %v", got.Headers)
	}
	if got.Query != "a=1&b=2" {
		t.Errorf("query = %q, want the credential parameters removed", got.Query)
	}
	if got.ID != m.ID || got.EndpointID != acme.ep.ID || got.ConnectionID != acme.conn.ID || got.State != "queued" ||
		got.MaxAttempts != 6 || got.Method != "POST" || got.Digest != m.Digest || !got.ReceivedAt.Equal(t0) ||
		got.ReceivedAt.Location() != time.UTC || got.EventIDs == nil || got.BodyExpired {
		t.Errorf("message: %+v", got)
	}
}

func TestMessageBodyIsServedExactlyAsReceived(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	binary := "\x00\xff<script>alert(1)</script>\r\n"
	cases := []struct {
		header http.Header
		want   string
	}{
		{http.Header{"Content-Type": {"text/html; charset=utf-8"}}, "text/html; charset=utf-8"},
		{http.Header{}, "application/octet-stream"},
	}
	for _, c := range cases {
		m := e.ingest(acme, "", c.header, binary)
		rec := e.do("GET", "/api/v1/messages/"+m.ID+"/body", acme.org.APIKey, nil)
		if rec.Code != 200 || rec.Body.String() != binary {
			t.Fatalf("body: %d %q", rec.Code, rec.Body)
		}
		h := rec.Header()
		if h.Get("Content-Type") != c.want || h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("headers: %v", h)
		}
	}
}

func TestMessageListPagesNewestFirstAndFilters(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	other := must[api.Endpoint](e, 201, "POST", "/api/v1/endpoints", acme.org.APIKey, api.CreateEndpointRequest{ConnectionID: acme.conn.ID})
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, e.ingest(acme, "", http.Header{}, "x").ID)
	}
	elsewhere := acme
	elsewhere.ep = other
	e.ingest(elsewhere, "", http.Header{}, "y")

	path := "/api/v1/messages?endpoint_id=" + acme.ep.ID
	first := must[api.List[api.Message]](e, 200, "GET", path+"&limit=2", acme.org.APIKey, nil)
	if len(first.Items) != 2 || first.Items[0].ID != ids[2] || first.Items[1].ID != ids[1] || first.NextCursor == "" {
		t.Fatalf("first page: %+v", first)
	}
	second := must[api.List[api.Message]](e, 200, "GET", path+"&limit=2&cursor="+first.NextCursor, acme.org.APIKey, nil)
	if len(second.Items) != 1 || second.Items[0].ID != ids[0] || second.NextCursor != "" {
		t.Fatalf("second page: %+v", second)
	}
	if got := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?state=queued", acme.org.APIKey, nil); len(got.Items) != 4 {
		t.Fatalf("queued: %d, want 4", len(got.Items))
	}
	if got := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?state=dead", acme.org.APIKey, nil); len(got.Items) != 0 {
		t.Fatalf("dead: %d, want 0", len(got.Items))
	}
}

func TestBodyURLServesTheBodyWithoutATokenUntilItExpires(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	m := e.ingest(acme, "", http.Header{"Content-Type": {"application/json"}}, `{"big":"payload"}`)
	bu := must[api.BodyURL](e, 200, "POST", "/api/v1/messages/"+m.ID+"/body-url", acme.org.APIKey, nil)
	if !strings.HasPrefix(bu.URL, publicURL+"/body/") || !bu.ExpiresAt.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("body url: %+v", bu)
	}
	path := strings.TrimPrefix(bu.URL, publicURL)

	e.clock.Advance(5*time.Minute - time.Second)
	rec := e.do("GET", path, "", nil)
	if rec.Code != 200 || rec.Body.String() != `{"big":"payload"}` || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("before expiry: %d %q %v", rec.Code, rec.Body, rec.Header())
	}

	// Tampering with the address, or reusing its signature for another message, finds nothing.
	other := e.ingest(acme, "", http.Header{}, "other")
	signed := strings.TrimPrefix(path, "/body/")
	_, rest, _ := strings.Cut(signed, ".")
	expiry, mac, _ := strings.Cut(rest, ".")
	for _, bad := range []string{
		other.ID + "." + rest,
		m.ID + ".9999999999." + mac,
		m.ID + "." + expiry + "." + strings.Repeat("A", len(mac)),
		m.ID,
		"garbage",
	} {
		if rec := e.do("GET", "/body/"+bad, "", nil); rec.Code != 404 || strings.Contains(rec.Body.String(), "payload") {
			t.Errorf("tampered %q: %d %s", bad, rec.Code, rec.Body)
		}
	}

	e.clock.Advance(time.Second)
	rec = e.do("GET", path, "", nil)
	if rec.Code != 404 || strings.Contains(rec.Body.String(), "expire") {
		t.Fatalf("after expiry: %d %s", rec.Code, rec.Body)
	}
}

func TestBodyURLOfAnUnknownMessageIs404(t *testing.T) {
	e := newEnv(t)
	wantError(t, e.do("POST", "/api/v1/messages/"+intake.NewID()+"/body-url", staffToken, nil), 404, intake.ENOTFOUND, "not found")
}

func TestEventsAreListedAndShownWithTheirMessage(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	m := e.ingest(acme, "", http.Header{}, `{"id":"evt_1"}`)
	ctx := context.Background()
	claims, err := e.store.ClaimMessages(ctx, t0, time.Minute, 10)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %v %v", claims, err)
	}
	ev := intake.Event{
		ID: intake.NewID(), OrgID: acme.org.ID, ConnectionID: acme.conn.ID, MessageID: m.ID, Provider: testProvider,
		Type: "apitest.thing.happened", Kind: intake.KindEvent, ProviderEventID: "evt_1", OccurredAt: t0.Add(-time.Minute),
		ReceivedAt: t0, Subject: &intake.Subject{App: "billing", RecordID: "inv_9"}, Data: []byte(`{"amount":42}`),
		State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: t0, CreatedAt: t0,
	}
	if _, err := e.store.SettleMessage(ctx, t0, intake.Settlement{
		MessageID: m.ID, Attempt: claims[0].Attempt, To: intake.MessageProcessed, Outcome: intake.OutcomeEvents,
		ProviderEventID: "evt_1", Events: []intake.Event{ev},
	}); err != nil {
		t.Fatal(err)
	}

	list := must[api.List[api.Event]](e, 200, "GET", "/api/v1/events?type=apitest.thing.happened&state=pending", acme.org.APIKey, nil)
	if len(list.Items) != 1 || list.Items[0].ID != ev.ID {
		t.Fatalf("events: %+v", list)
	}
	got := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+ev.ID, acme.org.APIKey, nil)
	if got.Type != ev.Type || got.Kind != "event" || got.State != "pending" || got.MessageID != m.ID || got.Provider != testProvider ||
		got.ProviderEventID != "evt_1" || got.Subject == nil || *got.Subject != *ev.Subject || string(got.Data) != `{"amount":42}` ||
		!got.OccurredAt.Equal(ev.OccurredAt) || got.Deliveries == nil || got.Replay {
		t.Fatalf("event: %+v", got)
	}
	msg := must[api.MessageDetail](e, 200, "GET", "/api/v1/messages/"+m.ID, acme.org.APIKey, nil)
	if msg.State != "processed" || msg.Outcome != "events" || msg.ProviderEventID != "evt_1" || len(msg.EventIDs) != 1 || msg.EventIDs[0] != ev.ID {
		t.Fatalf("message: %+v", msg)
	}

	wantError(t, e.do("GET", "/api/v1/events/"+ev.ID, globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	if got := must[api.List[api.Event]](e, 200, "GET", "/api/v1/events", globex.org.APIKey, nil); len(got.Items) != 0 {
		t.Fatalf("globex sees acme's events: %+v", got.Items)
	}
}
