package api_test

import (
	"log/slog"
	"net/netip"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/testkit"
)

// withPolicy serves the API with an operator's ranges beside the default
// policy, as `intake serve --consumer-deny/--consumer-allow` does.
func withPolicy(t *testing.T, e *env, deny, allow []string) {
	t.Helper()
	ranges := func(vs []string) []netip.Prefix {
		var ps []netip.Prefix
		for _, v := range vs {
			ps = append(ps, netip.MustParsePrefix(v))
		}
		return ps
	}
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	e.h = validating(t, api.New(api.Config{Control: control.New(control.Config{Store: e.store, Sealer: e.sealer, StaffToken: staffToken,
		PublicURL: publicURL, ConsumerPolicy: delivery.DefaultPolicy().Tighten(ranges(deny), ranges(allow)), Rules: testkit.Rules(t),
		Logger: logger}), Wakes: e.store, PublicURL: publicURL, Logger: logger}).Handler())
}

func TestAnOperatorsDeniedRangeIsRefusedWhenAConsumerOrNotificationURLIsSaved(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	withPolicy(t, e, []string{"10.0.0.0/8", "192.168.0.0/16"}, nil)
	for _, url := range []string{"http://10.1.2.3/hooks", "http://[::ffff:10.1.2.3]/", "http://012.1.2.3/", "http://[64:ff9b::c0a8:101]/"} {
		req := newConsumer("private", "*")
		req.URL = url
		wantError(t, e.do("POST", "/api/v1/consumers", acme.org.APIKey, req), 400, intake.EINVALID, "refused by the consumer address policy")
		wantError(t, e.do("PUT", "/api/v1/orgs/"+acme.org.ID+"/notifications", acme.org.APIKey,
			api.NotificationsRequest{URL: url, Topics: []string{intake.NoticeEventDead}}), 400, intake.EINVALID, "refused by the consumer address policy")
	}
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("public", "*"))
	wantError(t, e.do("PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, `{"url":"http://192.168.1.1/"}`), 400, intake.EINVALID,
		"address 192.168.1.1 is refused by the consumer address policy")
}

func TestAnAllowListAdmitsOnlyItsRangesAndNeverTheMetadataAddresses(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	withPolicy(t, e, nil, []string{"10.1.0.0/16", "100.64.0.0/10", "169.254.0.0/16"})
	for url, status := range map[string]int{
		"http://10.1.2.3/hooks":         201,
		"http://100.64.0.1/hooks":       201,
		"http://10.2.0.1/hooks":         400,
		"http://127.0.0.1/hooks":        400,
		"http://100.100.100.200/latest": 400,
		"http://169.254.169.254/latest": 400,
		"http://[::ffff:a9fe:a9fe]/":    400,
		"http://0x64.0x64.0x64.0xc8/":   400,
	} {
		req := newConsumer("c", "*")
		req.URL = url
		if rec := e.do("POST", "/api/v1/consumers", acme.org.APIKey, req); rec.Code != status {
			t.Errorf("%s: %d, want %d: %s", url, rec.Code, status, rec.Body)
		}
	}
}
