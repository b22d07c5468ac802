package provider

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

func TestCheckSecrets(t *testing.T) {
	long := strings.Repeat("s", MaxSecretLength+1)
	many := make([]string, MaxSecrets+1)
	for i := range many {
		many[i] = "s"
	}
	for _, c := range []struct {
		provider string
		secrets  []string
		want     string // "" for accepted
	}{
		{"none", nil, ""},
		{"none", []string{"s"}, "takes no secrets"},
		{"stripe", nil, "needs at least one signing secret"},
		{"stripe", []string{"whsec_a", "whsec_b"}, ""},
		{"asana", nil, ""}, // its secret comes in the handshake
		{"stripe", []string{" "}, "secrets[0] is empty"},
		{"stripe", []string{"s", long}, "secrets[1] is longer than 4096 bytes"},
		{"stripe", many, "at most 10 secrets"},
	} {
		err := CheckSecrets(c.provider, c.secrets)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %d secrets: %v", c.provider, len(c.secrets), err)
		case c.want != "" && (intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %d secrets: %v, want EINVALID %q", c.provider, len(c.secrets), err, c.want)
		}
	}
}

func TestCheckConfig(t *testing.T) {
	a, _ := Lookup("stripe")
	for raw, want := range map[string]string{"": "{}", " null ": "{}", `{ "tolerance" : "5m" }`: `{"tolerance":"5m"}`} {
		if got, err := CheckConfig(a, json.RawMessage(raw)); err != nil || string(got) != want {
			t.Errorf("CheckConfig(%q) = %s, %v; want %s", raw, got, err, want)
		}
	}
	for raw, want := range map[string]string{`[1]`: "must be a JSON object", `{"tolerance":"soon"}`: "config for stripe"} {
		if _, err := CheckConfig(a, json.RawMessage(raw)); intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckConfig(%q) = %v, want EINVALID %q", raw, err, want)
		}
	}
}
