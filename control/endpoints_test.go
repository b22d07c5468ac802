package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
)

// An endpoint's max_body_bytes stays within the server's --max-body-bytes,
// blob store or not: a create, an update and a document above it are
// refused naming the maximum, and change nothing. An update that leaves
// max_body_bytes alone still goes through on an endpoint stored with more
// before the cap was set (ingress holds it to the cap), and an endpoint
// given no max_body_bytes gets the default or the cap, whichever is lower.
func TestAnEndpointsMaxBodyBytesAboveTheServersIsRefusedNamingTheMaximum(t *testing.T) {
	for name, open := range testkit.Stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			sealer := testkit.Sealer(t)
			clock := testkit.NewClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
			org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: clock.Now()}
			conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "github", Name: "gh", CreatedAt: clock.Now()}
			// Stored with 32 MiB before the server was capped at 10 MiB.
			old := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: []byte(org.ID),
				Enabled: true, MaxBodyBytes: 32 << 20, CreatedAt: clock.Now()}
			for _, err := range []error{s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(org.ID)}),
				s.CreateConnection(ctx, conn), s.CreateEndpoint(ctx, old)} {
				if err != nil {
					t.Fatal(err)
				}
			}
			admin := control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_test", OrgName: "acme", Role: intake.RoleAdmin}
			const want = "max_body_bytes must be between 1 and 10485760 (the server's maximum)"
			refused := func(what string, err error) {
				t.Helper()
				if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), want) {
					t.Errorf("%s: %v, want EINVALID naming the server's maximum", what, err)
				}
			}
			for _, blobs := range []intake.Blobs{nil, &blob.Memory{}} {
				p := control.New(control.Config{Store: s, Sealer: sealer, Clock: clock, Rules: testkit.Rules(t), Blobs: blobs, MaxBodyBytes: 10 << 20})
				over := int64(10<<20 + 1)
				_, err := p.CreateEndpoint(ctx, admin, conn.ID, control.Limits{MaxBodyBytes: &over})
				refused("create", err)
				_, err = p.UpdateEndpoint(ctx, admin, old.ID, control.Limits{MaxBodyBytes: &over})
				refused("update", err)
				doc := control.Document{Orgs: []control.OrgSpec{{Name: "acme", Connections: []control.ConnectionSpec{{Name: "gh", Provider: "github",
					Endpoints: []control.EndpointSpec{{Name: "big", MaxBodyBytes: &over}}}}}}}
				_, err = p.Apply(ctx, admin, doc, control.ApplyOptions{})
				refused("apply", err)
				if eps, _ := s.ListEndpoints(ctx, admin.Scope); len(eps) != 1 || eps[0].MaxBodyBytes != 32<<20 {
					t.Fatalf("%d endpoints after the refusals, want the one stored before, unchanged", len(eps))
				}
			}

			p := control.New(control.Config{Store: s, Sealer: sealer, Clock: clock, Rules: testkit.Rules(t), MaxBodyBytes: 10 << 20})
			no := false
			e, err := p.UpdateEndpoint(ctx, admin, old.ID, control.Limits{Enabled: &no})
			if err != nil || e.Enabled || e.MaxBodyBytes != 32<<20 {
				t.Fatalf("disabling an endpoint stored above the cap: %+v %v", e, err)
			}
			atCap := int64(10 << 20)
			if e, err := p.UpdateEndpoint(ctx, admin, old.ID, control.Limits{MaxBodyBytes: &atCap}); err != nil || e.MaxBodyBytes != atCap {
				t.Fatalf("lowering it to the cap: %+v %v", e, err)
			}
			small := control.New(control.Config{Store: s, Sealer: sealer, Clock: clock, Rules: testkit.Rules(t), MaxBodyBytes: 512 << 10})
			if c, err := small.CreateEndpoint(ctx, admin, conn.ID, control.Limits{}); err != nil || c.MaxBodyBytes != 512<<10 {
				t.Fatalf("an endpoint given no max_body_bytes under a cap of 512 KiB: %+v %v", c.Endpoint, err)
			}
		})
	}
}
