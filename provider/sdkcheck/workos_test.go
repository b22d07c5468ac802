package sdkcheck

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
)

const workosSecret = "sdkcheck-workos-webhook-secret"

// @workos-inc/node signs (webhooks.computeSignature) and verifies
// (webhooks.constructEvent, with its default three-minute tolerance judged
// on the wall clock, so the deliveries are signed around now and received
// now). Only the age is judged, by both.
func TestWorkOSAgreesWithWorkOSNode(t *testing.T) {
	now := time.Now()
	good := sample(t, "workos", workosSecret, now)
	byWorkOS := func(at time.Time) *provider.Request { return nodeSigned(t, "workos", workosSecret, good.Body, at, now) }
	header := good.Header.Get("WorkOS-Signature")
	sig := header[strings.Index(header, "v1=")+3:]
	ts := strconv.FormatInt(now.UnixMilli(), 10)

	agreeNode(t, "workos", []string{workosSecret}, nil, []delivery{
		{"intake's sample", good, true},
		{"signed by the SDK now", byWorkOS(now), true},
		{"signed two minutes before receipt", byWorkOS(now.Add(-2 * time.Minute)), true},
		{"signed five minutes before receipt", byWorkOS(now.Add(-5 * time.Minute)), false},
		{"signed ten minutes after receipt", byWorkOS(now.Add(10 * time.Minute)), true},
		{"body changed by one byte", withBody(good, []byte(replaceOnce(t, string(good.Body), "someone@", "someone!"))), false},
		{"signature changed by one digit", withHeader(good, "WorkOS-Signature", "t="+ts+", v1="+flipHex(sig)), false},
		{"timestamp moved by a millisecond", withHeader(good, "WorkOS-Signature", "t="+strconv.FormatInt(now.UnixMilli()+1, 10)+", v1="+sig), false},
		{"signed with another secret", sample(t, "workos", "sdkcheck-another-secret", now), false},
		{"no WorkOS-Signature", withHeader(good, "WorkOS-Signature", ""), false},
	})
}
