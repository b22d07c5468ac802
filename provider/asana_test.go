package provider

import (
	"testing"
	"time"
)

// Asana publishes no vector; these requests are signed with a known hook
// secret as https://developers.asana.com/docs/webhooks-guide describes:
// X-Hook-Signature is the hex HMAC-SHA256 of the body under the secret the
// handshake carried.
const (
	asanaSecret    = "8ea5b4a5c0d7e6f1a2b3c4d5e6f70819"
	asanaTaskEvent = `{"user":{"gid":"1111","resource_type":"user"},"created_at":"2025-01-10T18:46:16.136Z","action":"changed",` +
		`"resource":{"gid":"2222","resource_type":"task","resource_subtype":"default_task"},"parent":null,"change":{"field":"name","action":"changed"}}`
	asanaStoryEvent = `{"user":{"gid":"1111","resource_type":"user"},"created_at":"2025-01-10T18:46:17.001Z","action":"added",` +
		`"resource":{"gid":"3333","resource_type":"story","resource_subtype":"comment_added"},"parent":{"gid":"2222","resource_type":"task"}}`
	asanaBody = `{"events":[` + asanaTaskEvent + `,` + asanaStoryEvent + `]}`
)

func asanaRequest(sig, body string, kv ...string) *Request {
	return post(body, append([]string{"X-Hook-Signature", sig}, kv...)...)
}

func TestAsanaEchoesHandshakeSecret(t *testing.T) {
	a := adapter(t, "asana")
	r := post("", "X-Hook-Secret", asanaSecret)
	c, ok := a.(Challenger).Challenge(r, nil, nil)
	if !ok || c.Status != 200 || c.Header.Get("X-Hook-Secret") != asanaSecret || len(c.Body) != 0 {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	wantVerified(t, a.Verify(r, nil, nil))
	in, err := a.Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
}

func TestAsanaVerifiesSignedDelivery(t *testing.T) {
	wantVerified(t, adapter(t, "asana").Verify(asanaRequest(sha256Hex(asanaSecret, asanaBody), asanaBody), secrets("old", asanaSecret), nil))
}

func TestAsanaRejects(t *testing.T) {
	sig := sha256Hex(asanaSecret, asanaBody)
	wantAllRejected(t, "asana", nil, []rejectCase{
		{"tampered body", asanaRequest(sig, asanaBody+" "), secrets(asanaSecret)},
		{"wrong secret", asanaRequest(sig, asanaBody), secrets("other")},
		{"no secrets", asanaRequest(sig, asanaBody), nil},
		{"missing header", asanaRequest("", asanaBody), secrets(asanaSecret)},
		// A signed-looking delivery that also carries X-Hook-Secret is not a
		// handshake.
		{"signature and secret", asanaRequest("00", asanaBody, "X-Hook-Secret", asanaSecret), secrets(asanaSecret)},
	})
}

func TestAsanaSplitsBatchWithStableItemIDs(t *testing.T) {
	in, err := adapter(t, "asana").Interpret(asanaRequest("", asanaBody), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	a, b := in.Events[0], in.Events[1]
	if a.Type != "asana.task.changed" || b.Type != "asana.story.added" || in.EventType != "asana.batch" || in.ProviderEventID != "" {
		t.Fatalf("types %q %q message %q %q", a.Type, b.Type, in.EventType, in.ProviderEventID)
	}
	if a.ProviderEventID == "" || a.ProviderEventID == b.ProviderEventID {
		t.Fatalf("ids %q %q", a.ProviderEventID, b.ProviderEventID)
	}
	if !equalStrings(b.ObjectIDs, []string{"3333", "2222"}) || !a.OccurredAt.Equal(time.Date(2025, 1, 10, 18, 46, 16, 136000000, time.UTC)) {
		t.Errorf("objects %v occurred %v", b.ObjectIDs, a.OccurredAt)
	}
	// The same item re-sent in another batch keeps its id.
	again, _ := adapter(t, "asana").Interpret(asanaRequest("", `{"events":[`+asanaStoryEvent+`]}`), nil)
	if len(again.Events) != 1 || again.Events[0].ProviderEventID != b.ProviderEventID {
		t.Fatalf("re-sent item named %+v, want %q", again.Events, b.ProviderEventID)
	}
}

func TestAsanaHeartbeatHasNoEvents(t *testing.T) {
	in, err := adapter(t, "asana").Interpret(asanaRequest("", `{"events":[]}`), nil)
	if err != nil || len(in.Events) != 0 || in.Challenge {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
}
