package sdkcheck

import (
	"strconv"
	"testing"
	"time"
)

const slackSecret = "sdkcheck0slack0signing0secret000"

// @slack/bolt verifies (verifySlackRequest, told the time of receipt): v0
// signatures over "v0:<timestamp>:<body>", five minutes. Bolt judges only
// the age, where Slack's documentation and intake also refuse a time five
// minutes ahead, so no time ahead is put to it.
func TestSlackAgreesWithBolt(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "slack", slackSecret, now)
	sig := good.Header.Get("X-Slack-Signature")

	agreeNode(t, "slack", []string{slackSecret}, nil, []delivery{
		{"received when signed", good, true},
		{"received four minutes after signing", receivedAt(good, now.Add(4*time.Minute)), true},
		{"received ten minutes after signing", receivedAt(good, now.Add(10*time.Minute)), false},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "X-Slack-Signature", flipHex(sig)), false},
		{"timestamp moved by a second", withHeader(good, "X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix()+1, 10)), false},
		{"signed with another secret", sample(t, "slack", "sdkcheck-another-secret", now), false},
		{"no signature", withHeader(good, "X-Slack-Signature", ""), false},
	})
}
