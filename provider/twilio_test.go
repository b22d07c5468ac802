package provider

import (
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Twilio's helper-library vectors, from twilio/twilio-python,
// tests/unit/test_request_validator.py: auth token 12345, a voice request's
// parameters, and the URL with and without ports.
const (
	twDocToken    = "12345"
	twDocURL      = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twDocExpected = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	twDocJSON     = `{"property": "value", "boolean": true}`
	twDocJSONHash = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
)

var twDocParams = url.Values{
	"CallSid": {"CA1234567890ABCDE"}, "Digits": {"1234"}, "From": {"+14158675309"},
	"To": {"+18005551212"}, "Caller": {"+14158675309"},
}

func twRequest(u, sig, body string) *Request {
	r := post(body, "X-Twilio-Signature", sig, "Content-Type", "application/x-www-form-urlencoded")
	r.URL = u
	return r
}

func TestTwilioVerifiesLibraryVectors(t *testing.T) {
	body := twDocParams.Encode()
	cases := map[string]struct{ url, sig string }{
		"as given":                    {twDocURL, twDocExpected},
		"port removed on https":       {strings.Replace(twDocURL, ".com", ".com:1234", 1), twDocExpected},
		"own port kept on http":       {strings.Replace(strings.Replace(twDocURL, ".com", ".com:1234", 1), "https", "http", 1), "Zmvh+3yNM1Phv2jhDCwEM3q5ebU="},
		"default port added on https": {twDocURL, "kvajT1Ptam85bY51eRf/AJRuM3w="},
		"default port added on http":  {strings.Replace(twDocURL, "https", "http", 1), "0ZXoZLH/DfblKGATFgpif+LLRf4="},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			wantVerified(t, adapter(t, "twilio").Verify(twRequest(c.url, c.sig, body), secrets("old-auth-token", twDocToken), nil))
		})
	}
}

func TestTwilioVerifiesLibraryVectorWithRepeatedParameters(t *testing.T) {
	body := "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234"
	wantVerified(t, adapter(t, "twilio").Verify(twRequest(twDocURL, "IK+Dwps556ElfBT0I3Rgjkr1wJU=", body), secrets(twDocToken), nil))
}

func TestTwilioVerifiesLibraryVectorForJSONBody(t *testing.T) {
	r := twRequest(twDocURL+"&bodySHA256="+twDocJSONHash, "a9nBmqA0ju/hNViExpshrM61xv4=", twDocJSON)
	wantVerified(t, adapter(t, "twilio").Verify(r, secrets(twDocToken), nil))
}

func TestTwilioRejects(t *testing.T) {
	body := twDocParams.Encode()
	tampered := url.Values{}
	for k, v := range twDocParams {
		tampered[k] = v
	}
	tampered.Set("Digits", "9999")
	keys := secrets(twDocToken)
	wantAllRejected(t, "twilio", nil, []rejectCase{
		{"tampered parameter", twRequest(twDocURL, twDocExpected, tampered.Encode()), keys},
		{"extra parameter", twRequest(twDocURL, twDocExpected, body+"&Extra=1"), keys},
		{"other URL", twRequest("https://mycompany.com/other.php?foo=1&bar=2", twDocExpected, body), keys},
		{"wrong token", twRequest(twDocURL, twDocExpected, body), secrets("54321")},
		{"no secrets", twRequest(twDocURL, twDocExpected, body), nil},
		{"missing header", twRequest(twDocURL, "", body), keys},
		{"public URL unknown", twRequest("", twDocExpected, body), keys},
		{"JSON body altered under its hash", twRequest(twDocURL+"&bodySHA256="+twDocJSONHash, "a9nBmqA0ju/hNViExpshrM61xv4=", `{"property": "other", "boolean": true}`), keys},
		{"JSON body without bodySHA256", twRequest(twDocURL, "a9nBmqA0ju/hNViExpshrM61xv4=", twDocJSON), keys},
	})
}

func TestTwilioInterpretsInboundMessageAndStatusCallback(t *testing.T) {
	inbound := url.Values{"MessageSid": {"SM1e8c8fa0e8d64b9c8f9f1d6d1c9c4f11"}, "SmsStatus": {"received"},
		"From": {"+14155550100"}, "To": {"+14155550111"}, "Body": {"hello"}, "AccountSid": {"AC1"}}
	ev := oneEvent(t, adapter(t, "twilio"), twRequest(twDocURL, "", inbound.Encode()), nil)
	if ev.Type != "twilio.message" || ev.ProviderEventID != "SM1e8c8fa0e8d64b9c8f9f1d6d1c9c4f11" ||
		!equalStrings(ev.ObjectIDs, []string{"SM1e8c8fa0e8d64b9c8f9f1d6d1c9c4f11"}) {
		t.Fatalf("inbound: type %q id %q objects %v", ev.Type, ev.ProviderEventID, ev.ObjectIDs)
	}
	if !strings.Contains(string(ev.Data), `"Body":"hello"`) {
		t.Errorf("Data = %s", ev.Data)
	}
	status := url.Values{"MessageSid": {"SM2"}, "MessageStatus": {"delivered"}, "SmsStatus": {"delivered"}}
	r := twRequest(twDocURL, "", status.Encode())
	r.Header.Set("I-Twilio-Idempotency-Token", "4d3a5e6f-idem")
	ev = oneEvent(t, adapter(t, "twilio"), r, nil)
	if ev.Type != "twilio.message.delivered" || ev.ProviderEventID != "4d3a5e6f-idem" {
		t.Fatalf("status: type %q id %q", ev.Type, ev.ProviderEventID)
	}
}

func TestTwilioInterpretsCalls(t *testing.T) {
	ev := oneEvent(t, adapter(t, "twilio"), twRequest(twDocURL, "", twDocParams.Encode()+"&CallStatus=ringing"), nil)
	if ev.Type != "twilio.call.ringing" || ev.ProviderEventID != "" || !equalStrings(ev.ObjectIDs, []string{"CA1234567890ABCDE"}) {
		t.Fatalf("got type %q id %q objects %v", ev.Type, ev.ProviderEventID, ev.ObjectIDs)
	}
	progress := oneEvent(t, adapter(t, "twilio"), twRequest(twDocURL, "", "CallSid=CA9&CallStatus=completed&SequenceNumber=3"), nil)
	if progress.Type != "twilio.call.completed" || progress.ProviderEventID != "CA9:completed:3" {
		t.Fatalf("got type %q id %q", progress.Type, progress.ProviderEventID)
	}
}

func TestTwilioSplitsEventStreamsBatch(t *testing.T) {
	body := `[{"specversion":"1.0","type":"com.twilio.messaging.message.delivered","source":"/2010-04-01/Accounts/AC1/Messages/SM1.json",` +
		`"id":"EZ1","datacontenttype":"application/json","time":"2023-01-02T03:04:05.000Z","data":{"messageSid":"SM1"}},` +
		`{"specversion":"1.0","type":"com.twilio.voice.status-callback.call.completed","id":"EZ2","data":{"callSid":"CA2"}}]`
	in, err := adapter(t, "twilio").Interpret(twRequest(twDocURL+"?bodySHA256=x", "", body), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	if in.Events[0].Type != "twilio.messaging.message.delivered" || in.Events[0].ProviderEventID != "EZ1" ||
		!equalStrings(in.Events[0].ObjectIDs, []string{"SM1"}) || in.Events[0].Kind != intake.KindEvent {
		t.Errorf("first: %+v", in.Events[0])
	}
	if in.Events[1].Type != "twilio.voice.status-callback.call.completed" || in.Events[1].ProviderEventID != "EZ2" {
		t.Errorf("second: %+v", in.Events[1])
	}
}
