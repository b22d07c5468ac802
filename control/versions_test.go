package control_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
)

// TestRacingChangesOfDifferentFieldsBothStick: two changes of one
// consumer, and of one endpoint, made at once, each of another field,
// both stick, on both stores, round after round: each is written only over
// the version it read, and the one that lost the race is made again over
// the other's. A change made over a version read before another change is
// refused, and changes nothing.
func TestRacingChangesOfDifferentFieldsBothStick(t *testing.T) {
	for name, open := range testkit.Stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			sealer := testkit.Sealer(t)
			clock := testkit.NewClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
			org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: clock.Now()}
			conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "github", Name: "gh", CreatedAt: clock.Now()}
			ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, TokenHash: []byte(org.ID),
				Enabled: true, MaxBodyBytes: 1 << 20, Burst: 10, CreatedAt: clock.Now()}
			cons := intake.Consumer{ID: intake.NewID(), OrgID: org.ID, Name: "app", App: "app", URL: "https://app.example.com/hooks",
				EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("sealed"), CreatedAt: clock.Now()}
			for _, err := range []error{s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(org.ID)}),
				s.CreateConnection(ctx, conn), s.CreateEndpoint(ctx, ep), s.CreateConsumer(ctx, cons)} {
				if err != nil {
					t.Fatal(err)
				}
			}
			p := control.New(control.Config{Store: s, Sealer: sealer, Clock: clock, Rules: testkit.Rules(t)})
			who := control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "test", Role: intake.RoleAdmin}
			race := func(a, b func() error) {
				t.Helper()
				var wg sync.WaitGroup
				errs := make([]error, 2)
				wg.Go(func() { errs[0] = a() })
				wg.Go(func() { errs[1] = b() })
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			yes, no := true, false
			for round := range 20 {
				rate := float64(round + 1)
				race(func() error {
					_, err := p.UpdateConsumer(ctx, who, cons.ID, control.ConsumerUpdate{Enabled: &no})
					return err
				}, func() error {
					_, err := p.UpdateConsumer(ctx, who, cons.ID, control.ConsumerUpdate{ControlsUpdate: control.ControlsUpdate{RatePerSec: &rate}})
					return err
				})
				got, err := s.Consumer(ctx, who.Scope, cons.ID)
				if err != nil || got.Enabled || got.Controls.RatePerSec != rate {
					t.Fatalf("round %d: consumer enabled %v, rate %g (%v); want disabled at %g", round, got.Enabled, got.Controls.RatePerSec, err, rate)
				}
				race(func() error {
					_, err := p.UpdateEndpoint(ctx, who, ep.ID, control.Limits{Enabled: &no})
					return err
				}, func() error {
					_, err := p.UpdateEndpoint(ctx, who, ep.ID, control.Limits{RatePerSec: &rate})
					return err
				})
				e, err := s.Endpoint(ctx, who.Scope, ep.ID)
				if err != nil || e.Enabled || e.RatePerSec != rate {
					t.Fatalf("round %d: endpoint enabled %v, rate %g (%v); want disabled at %g", round, e.Enabled, e.RatePerSec, err, rate)
				}
				for _, err := range []error{
					func() error {
						_, err := p.UpdateConsumer(ctx, who, cons.ID, control.ConsumerUpdate{Enabled: &yes})
						return err
					}(),
					func() error { _, err := p.UpdateEndpoint(ctx, who, ep.ID, control.Limits{Enabled: &yes}); return err }(),
				} {
					if err != nil {
						t.Fatal(err)
					}
				}
			}

			read, err := s.Consumer(ctx, who.Scope, cons.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpdateConsumer(ctx, who, cons.ID, control.ConsumerUpdate{Name: new("renamed")}); err != nil {
				t.Fatal(err)
			}
			_, err = p.UpdateConsumer(ctx, who, cons.ID, control.ConsumerUpdate{Enabled: &no, Version: read.Version})
			if intake.ErrorCode(err) != intake.EVERSION || control.HTTPStatus(err) != 412 {
				t.Fatalf("a change over a version read before another: %v, want version_mismatch (412)", err)
			}
			if got, _ := s.Consumer(ctx, who.Scope, cons.ID); !got.Enabled || got.Version != read.Version+1 {
				t.Fatalf("the refused change changed the consumer: %+v", got)
			}
			done, err := p.UpdateConsumer(ctx, who, cons.ID, control.ConsumerUpdate{Enabled: &no, Version: read.Version + 1})
			if err != nil || done.Enabled || done.Version != read.Version+2 {
				t.Fatalf("a change over the current version: %+v %v", done, err)
			}
		})
	}
}

// TestRacingFirstNotificationPutsMintOneSecret: two first puts of an
// org's notification settings made at once both succeed, and exactly one
// answer carries the signing secret, the one the settings keep; a put over
// a version read before another put is refused.
func TestRacingFirstNotificationPutsMintOneSecret(t *testing.T) {
	for name, open := range testkit.Stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			sealer := testkit.Sealer(t)
			clock := testkit.NewClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
			p := control.New(control.Config{Store: s, Sealer: sealer, Clock: clock, Rules: testkit.Rules(t)})
			staff := control.Caller{Actor: "staff"}
			for round := range 10 {
				org := intake.Org{ID: intake.NewID(), Name: "acme-" + intake.NewID(), CreatedAt: clock.Now()}
				if err := s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(org.ID)}); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				got := make([]control.NotificationSettings, 2)
				errs := make([]error, 2)
				for i, topic := range []string{intake.NoticeMessageDead, intake.NoticeEventDead} {
					wg.Go(func() {
						got[i], errs[i] = p.PutNotifications(ctx, staff, org.ID, control.NotificationUpdate{Topics: []string{topic}})
					})
				}
				wg.Wait()
				var secrets []string
				for i := range got {
					if errs[i] != nil {
						t.Fatalf("round %d: %v", round, errs[i])
					}
					if got[i].SigningSecret != "" {
						secrets = append(secrets, got[i].SigningSecret)
					}
				}
				stored, err := s.NotificationSettings(ctx, intake.Scope{}, org.ID)
				if err != nil {
					t.Fatal(err)
				}
				kept, err := sealer.NotificationSecret(stored)
				if len(secrets) != 1 || err != nil || kept != secrets[0] || stored.Version != 2 {
					t.Fatalf("round %d: secrets answered %q, kept %q (%v), version %d; want one secret, the one kept, at version 2",
						round, secrets, kept, err, stored.Version)
				}
				_, err = p.PutNotifications(ctx, staff, org.ID, control.NotificationUpdate{Topics: []string{}, Version: 1})
				if intake.ErrorCode(err) != intake.EVERSION {
					t.Fatalf("round %d: a put over version 1 at version 2: %v, want version_mismatch", round, err)
				}
			}
		})
	}
}
