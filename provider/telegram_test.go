package provider

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Telegram documents no signature to reproduce: the secret_token set with
// setWebhook is sent as it is. The updates below are shaped as the Bot API
// reference's Update object (https://core.telegram.org/bots/api#update).
const (
	telegramSecret   = "my-bot-secret_token-1"
	telegramBody     = `{"update_id":10000,"message":{"date":1441645532,"chat":{"last_name":"Test Lastname","id":1111111,"type":"private","first_name":"Test Firstname","username":"Testusername"},"message_id":1365,"from":{"last_name":"Test Lastname","id":1111111,"is_bot":false,"first_name":"Test Firstname","username":"Testusername"},"text":"/start"}}`
	telegramCallback = `{"update_id":10001,"callback_query":{"id":"4382bfdwdsb323b2d9","from":{"id":1111111,"is_bot":false,"first_name":"Test"},"chat_instance":"-1","data":"Data from button callback","message":{"message_id":1366,"date":1441645540,"chat":{"id":1111111,"type":"private"},"text":"pick one"}}}`
)

func telegramRequest(token, body string) *Request {
	return post(body, "X-Telegram-Bot-Api-Secret-Token", token)
}

func TestTelegramVerifiesTheSecretToken(t *testing.T) {
	wantVerified(t, adapter(t, "telegram").Verify(telegramRequest(telegramSecret, telegramBody), secrets("an-older-token", telegramSecret), nil))
}

func TestTelegramRejects(t *testing.T) {
	wantAllRejected(t, "telegram", nil, []rejectCase{
		{"wrong secret", telegramRequest(telegramSecret, telegramBody), secrets("another-token")},
		{"token changed by one byte", telegramRequest(telegramSecret[:len(telegramSecret)-1]+"2", telegramBody), secrets(telegramSecret)},
		{"token prefix", telegramRequest(telegramSecret[:5], telegramBody), secrets(telegramSecret)},
		{"missing header", telegramRequest("", telegramBody), secrets(telegramSecret)},
		{"no secrets", telegramRequest(telegramSecret, telegramBody), nil},
		{"empty secret", telegramRequest(telegramSecret, telegramBody), secrets("")},
	})
}

func TestTelegramInterpretsAMessage(t *testing.T) {
	ev := oneEvent(t, adapter(t, "telegram"), telegramRequest("", telegramBody), nil)
	if ev.ProviderEventID != "10000" || ev.Type != "telegram.message" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"1111111", "1111111:1365"}) || !ev.OccurredAt.Equal(time.Unix(1441645532, 0)) {
		t.Errorf("ObjectIDs %v OccurredAt %v", ev.ObjectIDs, ev.OccurredAt)
	}
	if string(ev.Data) != telegramBody {
		t.Errorf("Data = %s", ev.Data)
	}
}

func TestTelegramTypesEachUpdateKind(t *testing.T) {
	ev := oneEvent(t, adapter(t, "telegram"), telegramRequest("", telegramCallback), nil)
	if ev.ProviderEventID != "10001" || ev.Type != "telegram.callback_query" ||
		!equalStrings(ev.ObjectIDs, []string{"4382bfdwdsb323b2d9", "1111111", "1111111:1366"}) {
		t.Fatalf("got %+v", ev)
	}
	edited := `{"update_id":10002,"edited_message":{"message_id":1365,"date":1441645532,"edit_date":1441645600,"chat":{"id":-100123,"type":"supergroup"},"text":"/start now"}}`
	ev = oneEvent(t, adapter(t, "telegram"), telegramRequest("", edited), nil)
	if ev.Type != "telegram.edited_message" || !ev.OccurredAt.Equal(time.Unix(1441645600, 0)) || !equalStrings(ev.ObjectIDs, []string{"-100123", "-100123:1365"}) {
		t.Fatalf("got %+v", ev)
	}
}

func TestTelegramRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"message":{}}`, `{"update_id":"1","message":{}}`, `{"update_id":1}`} {
		_, err := adapter(t, "telegram").Interpret(telegramRequest("", body), nil)
		wantPermanent(t, err)
	}
}
