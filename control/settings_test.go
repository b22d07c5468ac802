package control_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// A connection's settings as the transports get them: each that carries a
// credential is marked and comes without its value, so no transport can
// show it; the others come as written, in key order.
func TestSettingsMarkEachCredentialAndGiveNoValueOfIt(t *testing.T) {
	const verify = "meta-verify-0123456789"
	cn := intake.Connection{Provider: "meta", Config: json.RawMessage(`{"verify_token": "` + verify + `",
		"tolerance": "5m", "signing_key": "k-1", "client_secret": "s-1", "auth_header": "X-Hook-Key", "defer": {"type": ["a"]}}`)}
	got := control.Settings(cn)
	want := []struct {
		key        string
		credential bool
		value      string
	}{
		{"auth_header", false, `"X-Hook-Key"`},
		{"client_secret", true, ""},
		{"defer", false, `{"type": ["a"]}`},
		{"signing_key", true, ""},
		{"tolerance", false, `"5m"`},
		{"verify_token", true, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("settings %+v, want %d", got, len(want))
	}
	for i, w := range want {
		s := got[i]
		if s.Key != w.key || s.Credential != w.credential || string(s.Value) != w.value {
			t.Errorf("setting %d: %s credential %v value %s; want %s credential %v value %s",
				i, s.Key, s.Credential, s.Value, w.key, w.credential, w.value)
		}
	}
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), verify) || strings.Contains(string(b), "k-1") || strings.Contains(string(b), "s-1") {
		t.Fatalf("the settings carry a credential's value: %s", b)
	}
	if s := control.Settings(intake.Connection{Config: json.RawMessage(`not json`)}); s != nil {
		t.Fatalf("a config that does not parse lists %+v", s)
	}
}
