package provider

import (
	"crypto/ed25519"
	"encoding/hex"
	"testing"
	"time"
)

// Discord publishes no vector; these requests are signed with a fixed
// Ed25519 key as Discord's docs describe: X-Signature-Ed25519 is the hex
// signature of X-Signature-Timestamp + body under the application's key.
var discordKey = ed25519.NewKeyFromSeed([]byte("discord-test-seed-32-bytes-long!"))

func discordPublicKey() string { return hex.EncodeToString(discordKey.Public().(ed25519.PublicKey)) }

func discordRequest(key ed25519.PrivateKey, body string, at time.Time) *Request {
	ts := unix(at)
	return post(body, "X-Signature-Timestamp", ts, "X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(key, []byte(ts+body))))
}

const discordCommand = `{"type":2,"id":"786008729715212338","application_id":"775799577604522054","token":"A_UNIQUE_TOKEN",` +
	`"guild_id":"290926798626357250","channel_id":"645027906669510667","data":{"id":"771825006014889984","name":"blep","type":1},` +
	`"member":{"user":{"id":"53908232506183680","username":"Mason"}},"version":1}`

func TestDiscordVerifiesSignedInteraction(t *testing.T) {
	r := discordRequest(discordKey, discordCommand, received)
	other := ed25519.NewKeyFromSeed([]byte("another-seed-of-thirty-two-bytes"))
	wantVerified(t, adapter(t, "discord").Verify(r, secrets(hex.EncodeToString(other.Public().(ed25519.PublicKey)), discordPublicKey()), nil))
}

func TestDiscordRejects(t *testing.T) {
	good := discordRequest(discordKey, discordCommand, received)
	tampered := discordRequest(discordKey, discordCommand, received)
	tampered.Body = []byte(discordCommand[:len(discordCommand)-2] + "2}")
	forged := discordRequest(ed25519.NewKeyFromSeed([]byte("not-the-app-key-0123456789abcdef")), discordCommand, received)
	short := discordRequest(discordKey, discordCommand, received)
	short.Header.Set("X-Signature-Ed25519", short.Header.Get("X-Signature-Ed25519")[:64])
	stale := discordRequest(discordKey, discordCommand, received.Add(-6*time.Minute))
	future := discordRequest(discordKey, discordCommand, received.Add(6*time.Minute))
	noTS := discordRequest(discordKey, discordCommand, received)
	noTS.Header.Del("X-Signature-Timestamp")
	keys := secrets(discordPublicKey())
	wantAllRejected(t, "discord", nil, []rejectCase{
		{"tampered body", tampered, keys},
		{"other key signed", forged, keys},
		{"no secrets", good, nil},
		{"key not hex", good, secrets("not a key")},
		{"truncated signature", short, keys},
		{"stale timestamp", stale, keys},
		{"future timestamp", future, keys},
		{"missing timestamp", noTS, keys},
		{"missing signature", post(discordCommand, "X-Signature-Timestamp", unix(received)), keys},
	})
}

func TestDiscordAnswersPingWithPongAndBadSignaturesWith401(t *testing.T) {
	a := adapter(t, "discord").(Challenger)
	keys := secrets(discordPublicKey())
	ping := discordRequest(discordKey, `{"type":1,"id":"1","application_id":"2","token":"t","version":1}`, received)
	c, ok := a.Challenge(ping, keys, nil)
	if !ok || c.Status != 200 || c.ContentType != "application/json" || string(c.Body) != `{"type":1}` {
		t.Fatalf("PING answered %+v %s, %v", c, c.Body, ok)
	}
	in, err := adapter(t, "discord").Interpret(ping, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret(PING) = %+v, %v; want a handshake with no events", in, err)
	}
	for name, r := range map[string]*Request{
		"forged PING":    discordRequest(ed25519.NewKeyFromSeed([]byte("not-the-app-key-0123456789abcdef")), `{"type":1}`, received),
		"unsigned":       post(`{"type":1}`),
		"stale PING":     discordRequest(discordKey, `{"type":1}`, received.Add(-time.Hour)),
		"forged command": discordRequest(ed25519.NewKeyFromSeed([]byte("not-the-app-key-0123456789abcdef")), discordCommand, received),
	} {
		if c, ok := a.Challenge(r, keys, nil); !ok || c.Status != 401 {
			t.Errorf("%s answered %+v, %v; want 401", name, c, ok)
		}
	}
}

func TestDiscordDefersOtherInteractions(t *testing.T) {
	a := adapter(t, "discord").(Challenger)
	keys := secrets(discordPublicKey())
	for body, want := range map[string]string{
		discordCommand: `{"type":5}`,
		`{"type":3,"id":"3","data":{"custom_id":"ok"},"message":{"id":"m1"}}`: `{"type":6}`,
		`{"type":4,"id":"4","data":{"name":"blep"}}`:                          `{"type":8,"data":{"choices":[]}}`,
		`{"type":5,"id":"5","data":{"custom_id":"modal"}}`:                    `{"type":5}`,
	} {
		c, ok := a.Challenge(discordRequest(discordKey, body, received), keys, nil)
		if !ok || c.Status != 200 || string(c.Body) != want {
			t.Errorf("%s answered %+v %s, %v; want %s", body, c, c.Body, ok, want)
		}
	}
	if c, ok := a.Challenge(discordRequest(discordKey, discordCommand, received), keys, Config{"defer": false}); ok {
		t.Errorf("with defer false a command was answered %+v", c)
	}
	if c, ok := a.Challenge(discordRequest(discordKey, `{"type":1}`, received), keys, Config{"defer": false}); !ok || string(c.Body) != `{"type":1}` {
		t.Errorf("with defer false a PING was answered %+v, %v", c, ok)
	}
}

func TestDiscordInterpretsApplicationCommand(t *testing.T) {
	ev := oneEvent(t, adapter(t, "discord"), discordRequest(discordKey, discordCommand, received), nil)
	if ev.Type != "discord.application_command" || ev.ProviderEventID != "786008729715212338" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"290926798626357250", "645027906669510667"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
}
