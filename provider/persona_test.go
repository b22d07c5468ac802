package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Persona publishes its scheme and sample code but no signed example or
// SDK; the event below is shaped as its webhook documentation's
// inquiry.completed event and signed here as that sample code checks.
const (
	personaSecret = "wbhsec_3c9f8a1e-7b2d-4e5f-9a0b-1c2d3e4f5a6b"
	personaBody   = `{"data":{"type":"event","id":"evt_XGuYWp7WQLA9Ni2GhnAKpYDTDrT9","attributes":{"name":"inquiry.completed","payload":{"data":{"type":"inquiry","id":"inq_2CVZ4HyVg7qaboXz7m2jqVXg8Bvx","attributes":{"status":"completed","reference-id":"user-1"}}},"created-at":"2025-03-14T09:26:50.000Z"}}}`
)

func personaSig(secret string, at time.Time, body string) string {
	return "t=" + unix(at) + ",v1=" + sha256Hex(secret, unix(at)+"."+body)
}

func personaRequest(header, body string) *Request { return post(body, "Persona-Signature", header) }

func TestPersonaVerifiesItsSignature(t *testing.T) {
	wantVerified(t, adapter(t, "persona").Verify(personaRequest(personaSig(personaSecret, received, personaBody), personaBody), secrets(personaSecret), nil))
}

func TestPersonaAcceptsEitherSetWhileASecretRotates(t *testing.T) {
	a := adapter(t, "persona")
	header := personaSig("wbhsec_new", received, personaBody) + " " + personaSig(personaSecret, received, personaBody)
	wantVerified(t, a.Verify(personaRequest(header, personaBody), secrets(personaSecret), nil))
	wantVerified(t, a.Verify(personaRequest(header, personaBody), secrets("wbhsec_other", "wbhsec_new"), nil))
}

func TestPersonaRejects(t *testing.T) {
	good := personaSig(personaSecret, received, personaBody)
	wantAllRejected(t, "persona", nil, []rejectCase{
		{"body changed by one byte", personaRequest(good, strings.Replace(personaBody, "user-1", "user-2", 1)), secrets(personaSecret)},
		{"wrong secret", personaRequest(good, personaBody), secrets("wbhsec_other")},
		{"no secrets", personaRequest(good, personaBody), nil},
		{"empty secret", personaRequest(personaSig("", received, personaBody), personaBody), secrets("")},
		{"missing header", personaRequest("", personaBody), secrets(personaSecret)},
		{"too old", personaRequest(personaSig(personaSecret, received.Add(-301*time.Second), personaBody), personaBody), secrets(personaSecret)},
		{"too new", personaRequest(personaSig(personaSecret, received.Add(301*time.Second), personaBody), personaBody), secrets(personaSecret)},
		{"timestamp of another set", personaRequest("t=1,v1="+sha256Hex(personaSecret, unix(received)+"."+personaBody)+" t="+unix(received)+",v1=00", personaBody), secrets(personaSecret)},
		{"no v1", personaRequest("t="+unix(received)+",v0="+sha256Hex(personaSecret, unix(received)+"."+personaBody), personaBody), secrets(personaSecret)},
	})
}

func TestPersonaToleranceIsConfigurable(t *testing.T) {
	r := personaRequest(personaSig(personaSecret, received.Add(-10*time.Minute), personaBody), personaBody)
	wantVerified(t, adapter(t, "persona").Verify(r, secrets(personaSecret), Config{"tolerance": "15m"}))
}

func TestPersonaInterpretsAnEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "persona"), personaRequest("", personaBody), nil)
	if ev.ProviderEventID != "evt_XGuYWp7WQLA9Ni2GhnAKpYDTDrT9" || ev.Type != "persona.inquiry.completed" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2025, 3, 14, 9, 26, 50, 0, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{"inq_2CVZ4HyVg7qaboXz7m2jqVXg8Bvx"}) {
		t.Errorf("OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
}

func TestPersonaRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"data":{"id":"evt_1"}}`, "[]"} {
		_, err := adapter(t, "persona").Interpret(personaRequest("", body), nil)
		wantPermanent(t, err)
	}
}
