package notify_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/notify"
)

// TestANotificationURLAtAnInternalServiceIsLoggedByWhatFailed: the
// notifier records a receiver it gave up on by what failed, never by the
// greeting of the service the URL points at.
func TestANotificationURLAtAnInternalServiceIsLoggedByWhatFailed(t *testing.T) {
	e := newEnv(t, delivery.DefaultPolicy())
	var logs bytes.Buffer
	e.n = notify.New(notify.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Metrics: e.m, Attempts: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Sender: delivery.NewSender(delivery.Options{Policy: delivery.DefaultPolicy(), Timeout: 5 * time.Second})})
	e.subscribe(e.org, "http://"+testkit.Banner(t, testkit.NATSGreeting)+"/notify", "", intake.NoticeEventDead)
	e.notice(e.org, intake.NoticeEventDead, "evt_1", "d")
	e.poll()
	if !strings.Contains(logs.String(), `err="malformed HTTP answer"`) || strings.Contains(logs.String(), testkit.Marker) {
		t.Fatalf("the notifier's log:\n%s", logs.String())
	}
}
