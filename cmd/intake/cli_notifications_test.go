package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/intakehq/intake/api"
)

func TestNotificationsSetPrintsTheSecretOnceAndShowMasksSlack(t *testing.T) {
	s := newServer(t)
	tn := s.newTenant(t, "acme")
	out, errOut, err := s.runWithStderr(t, tn.org.APIKey, "notifications", "set", "--url", "http://127.0.0.1:9/ops",
		"--slack-url", "https://127.0.0.1:9/services/T/B/s3cr3t", "--topic", "message.dead", "--topic", "consumer.tripped", "--json")
	if err != nil {
		t.Fatal(err)
	}
	set := decodeOut[api.Notifications](t, out)
	if !strings.HasPrefix(set.SigningSecret, "whsec_") || !strings.Contains(errOut, "not be shown again") {
		t.Fatalf("first set: %+v, stderr %q", set, errOut)
	}
	show := decodeOut[api.Notifications](t, s.mustRunJSON(t, tn.org.APIKey, "notifications", "show"))
	if show.SigningSecret != "" || show.URL != "http://127.0.0.1:9/ops" || show.SlackWebhookURL != "https://127.0.0.1:9/…" ||
		!slices.Equal(show.Topics, []string{"message.dead", "consumer.tripped"}) {
		t.Fatalf("show = %+v", show)
	}
	// Staff, seeing more than one org, names the org.
	s.newTenant(t, "globex")
	if _, err := s.run(t, staffToken, "notifications", "show"); err == nil {
		t.Fatal("staff without --org: no error")
	}
	staff := decodeOut[api.Notifications](t, s.mustRunJSON(t, staffToken, "notifications", "show", "--org", tn.org.ID))
	if staff.URL != show.URL {
		t.Fatalf("staff show = %+v", staff)
	}
	if _, err := s.run(t, tn.org.APIKey, "notifications", "set", "--topic", "nope"); err == nil || !strings.Contains(err.Error(), "unknown topic") {
		t.Fatalf("unknown topic: %v", err)
	}
}
