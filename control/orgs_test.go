package control_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/store/sqlite"
)

// An org's own retention stays within the server's: a tenant cannot make
// the server keep its bodies or rows longer than the operator chose,
// whether it asks through the API, the console or a document.
func TestAnOrgsRetentionAboveTheServersIsRefusedNamingTheMaximum(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sealer, _ := seal.New(bytes.Repeat([]byte{5}, 32))
	ctl := control.New(control.Config{Store: s, Sealer: sealer, MaxBodyRetention: 168 * time.Hour, MaxRetention: 720 * time.Hour})
	staff := control.Caller{Actor: "staff"}
	org, _, err := ctl.CreateOrg(ctx, staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	key := control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_test", OrgName: "acme"}
	str := func(s string) *string { return &s }

	for _, c := range []struct {
		u    control.OrgUpdate
		want string
	}{
		{control.OrgUpdate{Retention: str("9600h")}, "retention must be between 1h and 720h (the server's maximum)"},
		{control.OrgUpdate{Retention: str("721h")}, "720h"},
		{control.OrgUpdate{BodyRetention: str("169h")}, "body_retention must be between 1h and 168h (the server's maximum)"},
	} {
		for _, who := range []control.Caller{key, staff} {
			_, err := ctl.UpdateOrg(ctx, who, org.ID, c.u)
			if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), c.want) {
				t.Errorf("%s: %v, want EINVALID naming %q", who.Actor, err, c.want)
			}
		}
	}
	o, err := ctl.UpdateOrg(ctx, key, org.ID, control.OrgUpdate{Retention: str("720h"), BodyRetention: str("168h")})
	if err != nil || o.Retention != 720*time.Hour || o.BodyRetention != 168*time.Hour {
		t.Fatalf("the server's own maximum: %+v %v", o, err)
	}

	doc := control.Document{Orgs: []control.OrgSpec{{Name: "acme", Retention: "9600h"}}}
	if _, err := ctl.Apply(ctx, staff, doc, control.ApplyOptions{}); intake.ErrorCode(err) != intake.EINVALID ||
		!strings.Contains(intake.ErrorMessage(err), "retention of org acme must be between 1h and 720h") {
		t.Fatalf("apply: %v, want EINVALID naming the maximum", err)
	}
}
