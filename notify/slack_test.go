package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/notify"
)

func TestSlackTextNamesWhatEachTopicIsAbout(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		topic, subject, want string
	}{
		{intake.NoticeSchemaChanged, "0193c5d2-7a1e-7b3c-9d4e-0123456789ab/stripe.invoice.paid",
			"event type stripe.invoice.paid of connection 0193c5d2-7a1e-7b3c-9d4e-0123456789ab"},
		{intake.NoticeMessageDead, "ep_1", "endpoint ep_1"},
		{intake.NoticeConsumerTripped, "c_1", "consumer c_1"},
	} {
		got := notify.SlackText(notify.Notification{Type: c.topic, OrgID: "o", Subject: c.subject, Count: 1, FirstAt: at, LastAt: at,
			Detail: "d"})
		if !strings.Contains(got, "*intake: "+c.topic+"* — "+c.want+" (org o)") {
			t.Errorf("%s: %q", c.topic, got)
		}
	}
}
