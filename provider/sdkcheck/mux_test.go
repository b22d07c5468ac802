package sdkcheck

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
)

const muxSecret = "sdkcheck-mux-webhook-signing-secret"

// @mux/mux-node signs (webhooks.computeSignature) and verifies
// (webhooks.verifySignature, five minutes judged on the wall clock, so the
// deliveries are signed around now and received now). Only the age is
// judged, by both; Mux-Signature may carry several v1 signatures.
func TestMuxAgreesWithMuxNode(t *testing.T) {
	now := time.Now()
	good := sample(t, "mux", muxSecret, now)
	byMux := func(secret string, at time.Time) *provider.Request {
		return nodeSigned(t, "mux", secret, good.Body, at, now)
	}
	header := good.Header.Get("Mux-Signature")
	sig := header[strings.Index(header, "v1=")+3:]
	ts := strconv.FormatInt(now.Unix(), 10)
	oldSecret := byMux("sdkcheck-the-old-secret", now).Header.Get("Mux-Signature")

	agreeNode(t, "mux", []string{muxSecret}, nil, []delivery{
		{"intake's sample", good, true},
		{"signed by the SDK now", byMux(muxSecret, now), true},
		{"signed four minutes before receipt", byMux(muxSecret, now.Add(-4*time.Minute)), true},
		{"signed ten minutes before receipt", byMux(muxSecret, now.Add(-10*time.Minute)), false},
		{"signed ten minutes after receipt", byMux(muxSecret, now.Add(10*time.Minute)), true},
		{"while the secret rolls, old and new signatures", withHeader(good, "Mux-Signature", oldSecret+",v1="+sig), true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "Mux-Signature", "t="+ts+",v1="+flipHex(sig)), false},
		{"timestamp moved by a second", withHeader(good, "Mux-Signature", "t="+strconv.FormatInt(now.Unix()+1, 10)+",v1="+sig), false},
		{"signed with another secret", withHeader(good, "Mux-Signature", oldSecret), false},
		{"no Mux-Signature", withHeader(good, "Mux-Signature", ""), false},
	})
}
