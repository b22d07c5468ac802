package provider

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Slack's published example, from
// https://api.slack.com/authentication/verifying-requests-from-slack and the
// Python SDK's tests (slackapi/python-slack-sdk,
// tests/slack_sdk/signature/test_signature_verifier.py): a slash command.
const (
	slackDocSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	slackDocTimestamp = "1531420618"
	slackDocBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackDocSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

var slackDocTime = time.Unix(1531420618, 0)

func slackRequest(sig, ts, body string, at time.Time) *Request {
	return &Request{
		Method:     "POST",
		Header:     headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", ts),
		Body:       []byte(body),
		ReceivedAt: at,
	}
}

func slackSign(secret, ts, body string) string { return "v0=" + sha256Hex(secret, "v0:"+ts+":"+body) }

func TestSlackVerifiesSDKVector(t *testing.T) {
	// Received in 2018, verified now: the timestamp is judged against the
	// received time only.
	r := slackRequest(slackDocSignature, slackDocTimestamp, slackDocBody, slackDocTime)
	wantVerified(t, adapter(t, "slack").Verify(r, secrets(slackDocSecret), nil))
}

func TestSlackAcceptsRotatedSecrets(t *testing.T) {
	r := slackRequest(slackDocSignature, slackDocTimestamp, slackDocBody, slackDocTime.Add(4*time.Minute))
	wantVerified(t, adapter(t, "slack").Verify(r, secrets("retired-secret", slackDocSecret), nil))
}

func TestSlackRejects(t *testing.T) {
	cases := []struct {
		name          string
		sig, ts, body string
		at            time.Time
		secrets       [][]byte
	}{
		{"tampered body (SDK case)", slackDocSignature, slackDocTimestamp, slackDocBody + "------", slackDocTime, secrets(slackDocSecret)},
		{"wrong secret", slackDocSignature, slackDocTimestamp, slackDocBody, slackDocTime, secrets("8f742231b10e8888abcd99yyyzzz85a6")},
		{"no secrets", slackDocSignature, slackDocTimestamp, slackDocBody, slackDocTime, nil},
		{"empty secret", slackSign("", slackDocTimestamp, slackDocBody), slackDocTimestamp, slackDocBody, slackDocTime, secrets("")},
		{"stale timestamp", slackDocSignature, slackDocTimestamp, slackDocBody, slackDocTime.Add(5*time.Minute + time.Second), secrets(slackDocSecret)},
		{"future timestamp", slackDocSignature, slackDocTimestamp, slackDocBody, slackDocTime.Add(-5*time.Minute - time.Second), secrets(slackDocSecret)},
		{"re-dated timestamp", slackDocSignature, "1531420619", slackDocBody, slackDocTime, secrets(slackDocSecret)},
		{"missing signature", "", slackDocTimestamp, slackDocBody, slackDocTime, secrets(slackDocSecret)},
		{"missing timestamp", slackDocSignature, "", slackDocBody, slackDocTime, secrets(slackDocSecret)},
		{"unknown version", "v1=" + slackDocSignature[3:], slackDocTimestamp, slackDocBody, slackDocTime, secrets(slackDocSecret)},
		{"not hex", "v0=nothex", slackDocTimestamp, slackDocBody, slackDocTime, secrets(slackDocSecret)},
		{"timestamp not a number", slackSign(slackDocSecret, "soon", slackDocBody), "soon", slackDocBody, slackDocTime, secrets(slackDocSecret)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRejected(t, adapter(t, "slack").Verify(slackRequest(c.sig, c.ts, c.body, c.at), c.secrets, nil))
		})
	}
}

func TestSlackToleranceIsConfigurable(t *testing.T) {
	r := slackRequest(slackDocSignature, slackDocTimestamp, slackDocBody, slackDocTime.Add(9*time.Minute))
	wantRejected(t, adapter(t, "slack").Verify(r, secrets(slackDocSecret), nil))
	wantVerified(t, adapter(t, "slack").Verify(r, secrets(slackDocSecret), Config{"tolerance": "10m"}))
}

func TestSlackInterpretsSlashCommandWithoutToken(t *testing.T) {
	ev := oneEvent(t, adapter(t, "slack"), &Request{Body: []byte(slackDocBody)}, nil)
	if ev.Type != "slack.slash_command" || ev.ProviderEventID != "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"G8PSS9T3V"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	var data map[string]string
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatalf("Data %s: %v", ev.Data, err)
	}
	if data["command"] != "/webhook-collect" || data["channel_id"] != "G8PSS9T3V" {
		t.Errorf("Data = %v", data)
	}
	if _, ok := data["token"]; ok {
		t.Error("Data carries the legacy verification token")
	}
}

func TestSlackInterpretsAppMention(t *testing.T) {
	body := `{"token":"XXYYZZ","team_id":"T1","api_app_id":"A1","type":"event_callback",` +
		`"event":{"type":"app_mention","user":"U1","text":"<@U0> hi","ts":"1515449522.000016","thread_ts":"1515449438.000011","channel":"C1"},` +
		`"event_id":"Ev0LAN670R","event_time":1515449522}`
	ev := oneEvent(t, adapter(t, "slack"), &Request{Body: []byte(body)}, nil)
	if ev.ProviderEventID != "Ev0LAN670R" || ev.Type != "slack.app_mention" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if want := []string{"C1", "C1:1515449522.000016", "C1:1515449438.000011"}; !equalStrings(ev.ObjectIDs, want) {
		t.Errorf("ObjectIDs = %v, want %v", ev.ObjectIDs, want)
	}
	if !ev.OccurredAt.Equal(time.Unix(1515449522, 0)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if strings.Contains(string(ev.Data), "XXYYZZ") || !strings.Contains(string(ev.Data), `"event_id":"Ev0LAN670R"`) {
		t.Errorf("Data = %s, want the body without its token", ev.Data)
	}
	if !strings.Contains(string(ev.Data), `"text":"<@U0> hi"`) {
		t.Errorf("Data = %s, want the mention text as Slack wrote it", ev.Data)
	}
}

func TestSlackInterpretsLinkSharedAsLinkUnfurl(t *testing.T) {
	// Shaped like the example of https://api.slack.com/events/link_shared.
	body := `{"token":"XXYYZZ","team_id":"T123ABC456","type":"event_callback","event_id":"Ev123ABC456","event_time":1234567890,` +
		`"event":{"type":"link_shared","channel":"C123ABC456","user":"U123ABC456","message_ts":"123456789.9875",` +
		`"links":[{"domain":"example.com","url":"https://example.com/12345"}]}}`
	ev := oneEvent(t, adapter(t, "slack"), &Request{Body: []byte(body)}, nil)
	if ev.Type != "slack.link_shared" || ev.Kind != intake.KindLinkUnfurl || ev.ProviderEventID != "Ev123ABC456" {
		t.Fatalf("got type %q kind %q id %q", ev.Type, ev.Kind, ev.ProviderEventID)
	}
	if want := []string{"C123ABC456", "C123ABC456:123456789.9875"}; !equalStrings(ev.ObjectIDs, want) {
		t.Errorf("ObjectIDs = %v, want %v", ev.ObjectIDs, want)
	}
}

func TestSlackReadsReactionItemAsMessage(t *testing.T) {
	body := `{"type":"event_callback","event_id":"Ev2","event":{"type":"reaction_added","reaction":"eyes",` +
		`"item":{"type":"message","channel":"C9","ts":"1360782400.498405"},"event_ts":"1360782804.083113"}}`
	ev := oneEvent(t, adapter(t, "slack"), &Request{Body: []byte(body)}, nil)
	if want := []string{"C9", "C9:1360782400.498405"}; ev.Type != "slack.reaction_added" || !equalStrings(ev.ObjectIDs, want) {
		t.Fatalf("got type %q objects %v", ev.Type, ev.ObjectIDs)
	}
}

func TestSlackAnswersURLVerificationChallengeOnceSigned(t *testing.T) {
	body := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	a := adapter(t, "slack")
	r := slackRequest(slackSign(slackDocSecret, slackDocTimestamp, body), slackDocTimestamp, body, slackDocTime)
	c, ok := a.(Challenger).Challenge(r, secrets(slackDocSecret), nil)
	if !ok || c.Status != 200 || c.ContentType != "text/plain" || string(c.Body) != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	in, err := a.Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a challenge with no events", in, err)
	}
	for name, forged := range map[string]*Request{
		"unsigned":     {Body: []byte(body), ReceivedAt: slackDocTime},
		"other secret": slackRequest(slackSign("not the secret", slackDocTimestamp, body), slackDocTimestamp, body, slackDocTime),
		"stale":        slackRequest(slackSign(slackDocSecret, slackDocTimestamp, body), slackDocTimestamp, body, slackDocTime.Add(time.Hour)),
	} {
		if c, ok := a.(Challenger).Challenge(forged, secrets(slackDocSecret), nil); !ok || c.Status != 403 || len(c.Body) != 0 {
			t.Errorf("%s handshake answered %+v, %v; want 403 without the challenge", name, c, ok)
		}
	}
}

func TestSlackDoesNotChallengeOrdinaryRequests(t *testing.T) {
	for _, body := range []string{slackDocBody, `{"type":"event_callback","event":{"type":"app_mention"}}`, `{"type":"url_verification"}`, "", "{"} {
		if c, ok := adapter(t, "slack").(Challenger).Challenge(&Request{Body: []byte(body)}, nil, nil); ok {
			t.Errorf("Challenge(%q) = %+v, want none", body, c)
		}
	}
}

func TestSlackInterpretsBlockActions(t *testing.T) {
	payload := `{"type":"block_actions","token":"XXYYZZ","trigger_id":"12466734323.1395872398","user":{"id":"U1"},` +
		`"container":{"type":"message","message_ts":"1548261231.000200","channel_id":"C2"},` +
		`"channel":{"id":"C2","name":"review"},"message":{"ts":"1548261231.000200"},` +
		`"actions":[{"action_id":"approve","value":"yes"}]}`
	body := url.Values{"payload": {payload}}.Encode()
	ev := oneEvent(t, adapter(t, "slack"), &Request{Body: []byte(body)}, nil)
	if ev.Type != "slack.block_actions" || ev.ProviderEventID != "12466734323.1395872398" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if want := []string{"C2", "C2:1548261231.000200"}; !equalStrings(ev.ObjectIDs, want) {
		t.Errorf("ObjectIDs = %v, want %v", ev.ObjectIDs, want)
	}
	if strings.Contains(string(ev.Data), "XXYYZZ") || !strings.Contains(string(ev.Data), `"action_id":"approve"`) {
		t.Errorf("Data = %s, want the payload without its token", ev.Data)
	}
}

func TestSlackInterpretsViewSubmissionWithView(t *testing.T) {
	payload := `{"type":"view_submission","trigger_id":"t1","view":{"id":"V1","callback_id":"new_ticket"}}`
	ev := oneEvent(t, adapter(t, "slack"), &Request{Body: []byte("payload=" + url.QueryEscape(payload))}, nil)
	if ev.Type != "slack.view_submission" || !equalStrings(ev.ObjectIDs, []string{"V1"}) {
		t.Fatalf("got type %q objects %v", ev.Type, ev.ObjectIDs)
	}
}

func TestSlackTreatsSSLCheckAsHandshake(t *testing.T) {
	in, err := adapter(t, "slack").Interpret(&Request{Body: []byte("ssl_check=1&token=x")}, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
}

func TestSlackRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{
		"team_id=T1", "%zz", "payload=notjson", `payload={"user":"U1"}`,
		`{"type":"event_callback"}`, `{"event":{}}`, `{"type":"event_callback"`,
	} {
		_, err := adapter(t, "slack").Interpret(&Request{Body: []byte(body)}, nil)
		wantPermanent(t, err)
	}
}
