package api_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestNotificationSettingsShowTheSecretOnceAndMaskTheSlackURL(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	path := "/api/v1/orgs/" + acme.org.ID + "/notifications"
	wantError(t, e.do("GET", path, acme.org.APIKey, nil), 404, "not_found", "no notification settings")

	const slack = "https://127.0.0.1:9/services/T000/B000/XXXXsecretXXXX"
	req := api.NotificationsRequest{URL: "http://127.0.0.1:9/ops", SlackWebhookURL: slack,
		Topics: []string{intake.NoticeMessageDead, intake.NoticeConsumerTripped, intake.NoticeMessageDead}}
	first := must[api.Notifications](e, 200, "PUT", path, acme.org.APIKey, req)
	if !strings.HasPrefix(first.SigningSecret, "whsec_") {
		t.Fatalf("first put: signing_secret %q, want a whsec_ secret", first.SigningSecret)
	}
	want := api.Notifications{URL: req.URL, SlackWebhookURL: "https://127.0.0.1:9/…",
		Topics: []string{intake.NoticeMessageDead, intake.NoticeConsumerTripped}}
	first.SigningSecret = ""
	if !slices.Equal(first.Topics, want.Topics) || first.URL != want.URL || first.SlackWebhookURL != want.SlackWebhookURL {
		t.Fatalf("first put = %+v, want %+v", first, want)
	}
	got := must[api.Notifications](e, 200, "GET", path, acme.org.APIKey, nil)
	if got.SigningSecret != "" || got.SlackWebhookURL != want.SlackWebhookURL || !slices.Equal(got.Topics, want.Topics) {
		t.Fatalf("get = %+v", got)
	}
	stored, _ := e.store.NotificationSettings(t.Context(), intake.Scope{}, acme.org.ID)
	secretBefore := string(stored.SealedSecret)
	if strings.Contains(string(stored.SealedSlackURL), "XXXXsecretXXXX") {
		t.Fatal("the Slack URL is stored in the clear")
	}

	// A second put changes the settings, keeps the secret and does not show it.
	second := must[api.Notifications](e, 200, "PUT", path, acme.org.APIKey, api.NotificationsRequest{Topics: []string{intake.NoticeStorageQuota}})
	if second.SigningSecret != "" || second.URL != "" || second.SlackWebhookURL != "" {
		t.Fatalf("second put = %+v", second)
	}
	if stored, _ = e.store.NotificationSettings(t.Context(), intake.Scope{}, acme.org.ID); string(stored.SealedSecret) != secretBefore {
		t.Fatal("a second put replaced the signing secret")
	}

	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	var updates []api.AuditEntry
	for _, a := range audit.Items {
		if a.Action == "notifications.update" {
			updates = append(updates, a)
		}
	}
	if len(updates) != 2 || updates[1].TargetID != acme.org.ID {
		t.Fatalf("audit = %+v, want two notifications.update entries", updates)
	}
	for _, a := range updates {
		if strings.Contains(a.Detail, "XXXXsecretXXXX") {
			t.Fatalf("the audit log shows the Slack URL's secret: %s", a.Detail)
		}
	}
}

func TestInvalidNotificationSettingsAreRefusedAndNothingIsSaved(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	path := "/api/v1/orgs/" + acme.org.ID + "/notifications"
	for name, c := range map[string]struct {
		req  api.NotificationsRequest
		want string
	}{
		"unknown topic":      {api.NotificationsRequest{URL: "http://127.0.0.1:9/ops", Topics: []string{"message.dead", "everything"}}, "unknown topic"},
		"refused address":    {api.NotificationsRequest{URL: "http://169.254.169.254/latest", Topics: []string{"message.dead"}}, "address policy"},
		"http slack url":     {api.NotificationsRequest{SlackWebhookURL: "http://hooks.slack.com/services/T/B/X", Topics: []string{"message.dead"}}, "https"},
		"slack not a url":    {api.NotificationsRequest{SlackWebhookURL: "hooks.slack.com", Topics: []string{"message.dead"}}, "https"},
		"refused slack host": {api.NotificationsRequest{SlackWebhookURL: "https://169.254.169.254/services/T/B/X", Topics: []string{"message.dead"}}, "address policy"},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, e.do("PUT", path, acme.org.APIKey, c.req), 400, "invalid", c.want)
			wantError(t, e.do("GET", path, acme.org.APIKey, nil), 404, "not_found", "no notification settings")
		})
	}
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	for _, a := range audit.Items {
		if a.Action == "notifications.update" {
			t.Fatalf("a refused put was audited: %+v", a)
		}
	}
}

// A notification url's credentials are sealed like a consumer url's: each
// read, the audit and the export show them as ***, the database never holds
// them in the clear, and giving the url back as read keeps them.
func TestEveryCredentialInANotificationURLIsSealedAndShownAsStars(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	path := "/api/v1/orgs/" + acme.org.ID + "/notifications"
	const raw, shown = "http://127.0.0.1:9/ops?api_key=key-N7c2&team=core&access_token=at-N7c2",
		"http://127.0.0.1:9/ops?api_key=***&team=core&access_token=***"
	topics := []string{intake.NoticeMessageDead}
	if got := must[api.Notifications](e, 200, "PUT", path, acme.org.APIKey, api.NotificationsRequest{URL: raw, Topics: topics}); got.URL != shown {
		t.Fatalf("put url %q, want %q", got.URL, shown)
	}
	// As read, the url is the same url.
	if got := must[api.Notifications](e, 200, "PUT", path, acme.org.APIKey, api.NotificationsRequest{URL: shown, Topics: topics}); got.URL != shown {
		t.Fatalf("put as read: url %q, want %q", got.URL, shown)
	}
	for _, p := range []string{path, "/api/v1/audit", "/api/v1/export"} {
		if body := e.do("GET", p, acme.org.APIKey, nil).Body.String(); strings.Contains(body, "N7c2") {
			t.Errorf("GET %s shows a credential of the url: %s", p, body)
		}
	}
	if strings.Contains(string(e.dbBytes()), "N7c2") {
		t.Fatal("the database holds the notification url's credentials in the clear")
	}
	stored, err := e.store.NotificationSettings(t.Context(), intake.Scope{}, acme.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if dest, err := e.sealer.NotificationURL(stored); err != nil || dest != raw {
		t.Fatalf("notifications go to %q (%v), want %q", dest, err, raw)
	}
}
