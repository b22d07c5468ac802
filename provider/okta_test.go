package provider

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Okta authenticates with a header value set on the hook; these requests
// carry a known value as https://developer.okta.com/docs/concepts/event-hooks/ describes.
const (
	oktaSecret = "okta-shared-authorization-value"
	oktaBody   = `{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1",` +
		`"source":"https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Fm0g4","eventId":"RQRdXHZDSS-dZhpp1zjwew",` +
		`"data":{"events":[` +
		`{"uuid":"de1ff4d2-62c1-11e9-9d4f-bbb3e1e5f9e0","published":"2019-04-19T17:52:52.284Z","eventType":"user.session.start",` +
		`"actor":{"id":"00u1","type":"User"},"target":[{"id":"00u1","type":"User"}]},` +
		`{"uuid":"e31f3c4a-62c1-11e9-9d4f-bbb3e1e5f9e1","published":"2019-04-19T17:52:54.000Z","eventType":"user.lifecycle.create",` +
		`"target":[{"id":"00u2","type":"User"},{"id":"0oa3","type":"AppInstance"}]}]},` +
		`"eventTime":"2019-04-19T17:52:57.000Z","contentType":"application/json"}`
)

func TestOktaAcceptsItsAuthorizationValue(t *testing.T) {
	wantVerified(t, adapter(t, "okta").Verify(post(oktaBody, "Authorization", oktaSecret), secrets("old", oktaSecret), nil))
	custom := Config{"auth_header": "X-Intake-Key"}
	wantVerified(t, adapter(t, "okta").Verify(post(oktaBody, "X-Intake-Key", oktaSecret), secrets(oktaSecret), custom))
}

func TestOktaRejects(t *testing.T) {
	wantAllRejected(t, "okta", nil, []rejectCase{
		{"wrong value", post(oktaBody, "Authorization", "guess"), secrets(oktaSecret)},
		{"missing header", post(oktaBody), secrets(oktaSecret)},
		{"no secrets", post(oktaBody, "Authorization", oktaSecret), nil},
		{"verification challenge by POST", post(oktaBody, "X-Okta-Verification-Challenge", "x"), secrets(oktaSecret)},
	})
	wantRejected(t, adapter(t, "okta").Verify(post(oktaBody, "Authorization", oktaSecret), secrets(oktaSecret), Config{"auth_header": "X-Intake-Key"}))
	if adapter(t, "okta").ValidateConfig(Config{"auth_header": "Bad Header:"}) == nil {
		t.Error("ValidateConfig accepted a malformed auth_header")
	}
}

func TestOktaAnswersOneTimeVerification(t *testing.T) {
	a := adapter(t, "okta")
	r := post("", "X-Okta-Verification-Challenge", "VhbKaVOfgN8tsYxqWMdNg0BNJLaRsM6FmPfgT6ZO")
	r.Method = "GET"
	c, ok := a.(Challenger).Challenge(r, nil, nil)
	if !ok || c.Status != 200 || c.ContentType != "application/json" || string(c.Body) != `{"verification":"VhbKaVOfgN8tsYxqWMdNg0BNJLaRsM6FmPfgT6ZO"}` {
		t.Fatalf("Challenge = %+v %s, %v", c, c.Body, ok)
	}
	wantVerified(t, a.Verify(r, nil, nil))
	in, err := a.Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
}

func TestOktaSplitsEventsOfADelivery(t *testing.T) {
	in, err := adapter(t, "okta").Interpret(post(oktaBody, "Authorization", oktaSecret), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	if in.ProviderEventID != "RQRdXHZDSS-dZhpp1zjwew" || in.EventType != "okta.batch" {
		t.Errorf("message id %q type %q", in.ProviderEventID, in.EventType)
	}
	a, b := in.Events[0], in.Events[1]
	if a.Type != "okta.user.session.start" || a.ProviderEventID != "de1ff4d2-62c1-11e9-9d4f-bbb3e1e5f9e0" ||
		!a.OccurredAt.Equal(time.Date(2019, 4, 19, 17, 52, 52, 284000000, time.UTC)) {
		t.Errorf("first: %+v", a)
	}
	if b.Type != "okta.user.lifecycle.create" || !equalStrings(b.ObjectIDs, []string{"00u2", "0oa3"}) {
		t.Errorf("second: type %q objects %v", b.Type, b.ObjectIDs)
	}
}

func TestOktaNamesTheHeaderItsHookAuthenticatesWithAsACredential(t *testing.T) {
	for _, c := range []struct {
		config string
		want   []string
	}{
		{``, []string{"Authorization"}},
		{`{"auth_header": "X-Intake-Key"}`, []string{"X-Intake-Key"}},
	} {
		got := CredentialHeaders(intake.Connection{Provider: "okta", Config: json.RawMessage(c.config)})
		if !slices.Equal(got, c.want) {
			t.Errorf("config %q: credential headers %v, want %v", c.config, got, c.want)
		}
	}
	if got := CredentialHeaders(intake.Connection{Provider: "hmac", Config: json.RawMessage(`{"header": "X-Signature"}`)}); got != nil {
		t.Errorf("hmac's signature header is no credential: %v", got)
	}
}
