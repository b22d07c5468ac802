package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// TestNotificationsFormIsRefusedOverAVersionChangedSinceItWasShown guards
// the form's version: a save over the settings the page showed, when
// another save came between, is refused like the other console forms'
// (412, why shown) and leaves the other save's settings in place.
func TestNotificationsFormIsRefusedOverAVersionChangedSinceItWasShown(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	b := e.browser()
	b.signIn(acme.org.APIKey)
	csrf := b.csrf()
	save := func(version, topic string) page {
		return b.post("/console/notifications", url.Values{"csrf": {csrf}, "version": {version}, "topic": {topic}})
	}

	wantStatus(t, save("0", intake.NoticeMessageDead), http.StatusOK) // the first save shows the signing secret
	if p := b.get("/console/notifications"); !strings.Contains(p.body, `name="version" value="1"`) {
		t.Fatalf("the page after the first save does not carry version 1: %.2000s", p.body)
	}
	// Two pages showed version 1: the first saved...
	if p := save("1", intake.NoticeEventDead); p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "flash=notifications-saved") {
		t.Fatalf("saving over version 1: %d %q", p.status, p.header.Get("Location"))
	}
	// ...and the second is refused.
	p := save("1", intake.NoticeConsumerTripped)
	wantStatus(t, p, http.StatusPreconditionFailed)
	if body := html.UnescapeString(p.body); !strings.Contains(body, "changed since version 1") {
		t.Fatalf("a stale save's page does not say why: %.2000s", body)
	}
	got, err := e.store.NotificationSettings(context.Background(), intake.Scope{}, acme.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || !slices.Equal(got.Topics, []string{intake.NoticeEventDead}) {
		t.Fatalf("after the stale save: version %d topics %v, want 2 and the save it came after", got.Version, got.Topics)
	}
}
