package control_test

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

// TestURLsStoredWithCredentialsInTheClearAreSealedAtStart: a consumer and
// a notification URL saved in the clear by an earlier version are sealed
// by SealStoredURLs, shown with *** from then on and delivered to as
// given, each with an audit entry; a second start seals nothing.
func TestURLsStoredWithCredentialsInTheClearAreSealedAtStart(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const consumerURL, noticeURL = "redis://user-R2d9:pw-R2d9@127.0.0.1:6379/0?stream=s", "https://127.0.0.1/notices?api_key=key-Q8m3"
	cs := intake.Consumer{ID: intake.NewID(), OrgID: e.org.ID, Name: "app", App: "app", URL: consumerURL, EventTypes: []string{"*"},
		Enabled: true, CreatedAt: e.clock.Now()}
	cs.SealedSecret = e.sealer.Seal([]byte("secret"), []byte(cs.ID))
	if err := e.store.CreateConsumer(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if err := e.store.PutNotificationSettings(ctx, intake.Scope{}, intake.NotificationSettings{OrgID: e.org.ID, URL: noticeURL,
		Topics: []string{"message.dead"}, SealedSecret: e.sealer.Seal([]byte("s"), []byte(e.org.ID)), UpdatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}

	n, err := e.ctl.SealStoredURLs(ctx)
	if err != nil || n != 2 {
		t.Fatalf("sealed %d (%v), want the consumer's and the notifications' urls", n, err)
	}
	got, err := e.store.Consumer(ctx, intake.Scope{}, cs.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != "redis://***:***@127.0.0.1:6379/0?stream=s" {
		t.Errorf("consumer url shown as %q", got.URL)
	}
	if dest, err := e.sealer.ConsumerURL(got); err != nil || dest != consumerURL {
		t.Errorf("consumer delivered to %q (%v), want %q", dest, err, consumerURL)
	}
	s, err := e.store.NotificationSettings(ctx, intake.Scope{}, e.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != "https://127.0.0.1/notices?api_key=***" {
		t.Errorf("notification url shown as %q", s.URL)
	}
	if dest, err := e.sealer.NotificationURL(s); err != nil || dest != noticeURL {
		t.Errorf("notifications posted to %q (%v), want %q", dest, err, noticeURL)
	}
	audit, err := e.store.ListAudit(ctx, intake.Scope{}, intake.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	sealed := 0
	for _, a := range audit.Items {
		if a.Actor == "intake" {
			sealed++
		}
	}
	if sealed != 2 {
		t.Errorf("%d audit entries of intake's own, want 2", sealed)
	}
	if n, err := e.ctl.SealStoredURLs(ctx); err != nil || n != 0 {
		t.Fatalf("a second start sealed %d (%v), want none", n, err)
	}
}
