package control_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/rules"
)

// staffOnly is a need above every org's role: the staff token's alone.
const staffOnly intake.Role = "staff"

// roleRow is one action or read of the Plane and the least role it needs.
// call makes it with arguments that name nothing (random ids, empty
// input): what matters is whether the caller gets past its role.
type roleRow struct {
	method string
	what   string // tells rows of one method apart
	need   intake.Role
	call   func(ctx context.Context, p *control.Plane, c control.Caller) error
}

// roleRows is DESIGN §17 as a table: viewers read, operators also act on
// traffic (replay, re-route, pause, tests), admins also configure the org
// (connections, secrets, endpoints, consumers, keys, notifications), and
// staff alone makes and deletes orgs.
func roleRows(orgID string) []roleRow {
	id := intake.NewID()
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	name := "renamed"
	retention := "720h"
	return []roleRow{
		{"Orgs", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Orgs(ctx, c)
			return err
		}},
		{"Org", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Org(ctx, c, orgID)
			return err
		}},
		{"Connections", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Connections(ctx, c)
			return err
		}},
		{"Connection", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Connection(ctx, c, id)
			return err
		}},
		{"Endpoints", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Endpoints(ctx, c)
			return err
		}},
		{"Endpoint", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Endpoint(ctx, c, id)
			return err
		}},
		{"Consumers", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Consumers(ctx, c)
			return err
		}},
		{"Consumer", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Consumer(ctx, c, id)
			return err
		}},
		{"ConsumerHealth", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ConsumerHealth(ctx, c, id)
			return err
		}},
		{"ConsumerStats", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ConsumerStats(ctx, c, id, intake.StatsDay)
			return err
		}},
		{"ConsumerDeliveries", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ConsumerDeliveries(ctx, c, id, 20)
			return err
		}},
		{"Issues", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Issues(ctx, c, intake.IssueQuery{})
			return err
		}},
		{"Issue", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Issue(ctx, c, id, intake.IssueItemsQuery{})
			return err
		}},
		{"CountOpenIssues", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.CountOpenIssues(ctx, c)
			return err
		}},
		{"UpdateIssue", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.UpdateIssue(ctx, c, id, intake.IssueAcknowledged)
			return err
		}},
		{"RetryIssue", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.RetryIssue(ctx, c, id, true)
			return err
		}},
		{"EventTypes", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.EventTypes(ctx, c, "")
			return err
		}},
		{"EventType", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.EventType(ctx, c, id, "stripe.invoice.paid")
			return err
		}},
		{"AsyncAPIDocument", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.AsyncAPIDocument(ctx, c, orgID, "")
			return err
		}},
		{"Messages", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Messages(ctx, c, intake.MessageFilter{})
			return err
		}},
		{"CountMessages", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.CountMessages(ctx, c, intake.MessageFilter{})
			return err
		}},
		{"Message", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Message(ctx, c, id)
			return err
		}},
		{"MessageAttempts", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.MessageAttempts(ctx, c, id)
			return err
		}},
		{"MessageBody", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, _, err := p.MessageBody(ctx, c, id)
			return err
		}},
		{"OpenMessageBody", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			r, _, _, err := p.OpenMessageBody(ctx, c, id)
			if r != nil {
				r.Close()
			}
			return err
		}},
		{"SignOut", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			return p.SignOut(ctx, c, make([]byte, 32), time.Now())
		}},
		{"Events", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Events(ctx, c, intake.EventFilter{})
			return err
		}},
		{"Event", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Event(ctx, c, id)
			return err
		}},
		{"EventDetail", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.EventDetail(ctx, c, id)
			return err
		}},
		{"EventRoutes", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.EventRoutes(ctx, c, []string{id})
			return err
		}},
		{"Audit", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Audit(ctx, c, intake.AuditFilter{})
			return err
		}},
		{"Overview", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Overview(ctx, c, intake.OverviewQuery{Hours: 1, Now: until})
			return err
		}},
		{"ReplayJob", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ReplayJob(ctx, c, id)
			return err
		}},
		{"Notifications", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Notifications(ctx, c, orgID)
			return err
		}},
		{"Export", "", intake.RoleViewer, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Export(ctx, c, "")
			return err
		}},

		{"ReplayMessage", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ReplayMessage(ctx, c, id)
			return err
		}},
		{"ReplayDead", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ReplayDead(ctx, c, intake.MessageFilter{})
			return err
		}},
		{"ReplayWindow", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ReplayWindow(ctx, c, id, since, until)
			return err
		}},
		{"Reroute", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			return p.Reroute(ctx, c, id)
		}},
		{"Retry", "an event", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Retry(ctx, c, intake.RetrySelection{EventID: id}, false)
			return err
		}},
		{"Retry", "a consumer's, dry", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Retry(ctx, c, intake.RetrySelection{ConsumerID: id}, true)
			return err
		}},
		{"PreviewReplayWindow", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.PreviewReplayWindow(ctx, c, id, since, until)
			return err
		}},
		{"PreviewReplayWhere", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.PreviewReplayWhere(ctx, c, intake.MessageFilter{Type: "stripe.invoice.paid"})
			return err
		}},
		{"PreviewRerouteWhere", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.PreviewRerouteWhere(ctx, c, intake.EventFilter{})
			return err
		}},
		{"ReplayWhere", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ReplayWhere(ctx, c, intake.MessageFilter{Type: "stripe.invoice.paid"}, false)
			return err
		}},
		{"RerouteWhere", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.RerouteWhere(ctx, c, intake.EventFilter{}, false)
			return err
		}},
		{"PauseConsumer", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.PauseConsumer(ctx, c, id, true)
			return err
		}},
		{"TestRule", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.TestRule(ctx, c, control.RuleTest{Kind: rules.KindFilter, Source: "true", Event: []byte(`{"type":"x"}`)})
			return err
		}},
		{"TestConsumer", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.TestConsumer(ctx, c, id)
			return err
		}},
		{"PutSubjectLink", "", intake.RoleOperator, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.PutSubjectLink(ctx, c, control.NewSubjectLink{ConnectionID: id, ProviderObjectID: "cus_1", App: "crm", RecordID: "r1"})
			return err
		}},

		{"CreateConnection", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.CreateConnection(ctx, c, control.NewConnection{})
			return err
		}},
		{"UpdateConnection", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.UpdateConnection(ctx, c, id, control.ConnectionUpdate{Name: &name})
			return err
		}},
		{"ReplaceSecrets", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.ReplaceSecrets(ctx, c, id, []string{"whsec_1"})
			return err
		}},
		{"AdoptHandshakeSecret", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, _, err := p.AdoptHandshakeSecret(ctx, c, id, id)
			return err
		}},
		{"DisableConnection", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.DisableConnection(ctx, c, id)
			return err
		}},
		{"CreateEndpoint", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.CreateEndpoint(ctx, c, id, control.Limits{})
			return err
		}},
		{"RotateEndpoint", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.RotateEndpoint(ctx, c, id, nil)
			return err
		}},
		{"UpdateEndpoint", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.UpdateEndpoint(ctx, c, id, control.Limits{})
			return err
		}},
		{"CreateConsumer", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, _, err := p.CreateConsumer(ctx, c, control.NewConsumer{})
			return err
		}},
		{"UpdateConsumer", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.UpdateConsumer(ctx, c, id, control.ConsumerUpdate{Name: &name})
			return err
		}},
		{"RotateConsumerSecret", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, _, err := p.RotateConsumerSecret(ctx, c, id, nil)
			return err
		}},
		{"Delete", "a consumer", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			return p.Delete(ctx, c, intake.DeleteConsumer, id)
		}},
		{"EraseBodies", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.EraseBodies(ctx, c, id, since, until)
			return err
		}},
		{"PutNotifications", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.PutNotifications(ctx, c, orgID, control.NotificationUpdate{Topics: []string{"bogus"}})
			return err
		}},
		{"UpdateOrg", "its retention", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.UpdateOrg(ctx, c, orgID, control.OrgUpdate{Retention: &retention})
			return err
		}},
		{"CreateKey", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, _, err := p.CreateKey(ctx, c, orgID, intake.RoleViewer, "")
			return err
		}},
		{"RevokeKey", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			return p.RevokeKey(ctx, c, id)
		}},
		{"APIKeys", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.APIKeys(ctx, c)
			return err
		}},
		{"Apply", "", intake.RoleAdmin, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Apply(ctx, c, control.Document{}, control.ApplyOptions{DryRun: true})
			return err
		}},

		{"CreateOrg", "", staffOnly, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, _, err := p.CreateOrg(ctx, c, "")
			return err
		}},
		{"DeleteOrg", "", staffOnly, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.DeleteOrg(ctx, c, id)
			return err
		}},
		{"UpdateOrg", "its name", staffOnly, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.UpdateOrg(ctx, c, orgID, control.OrgUpdate{Name: &name})
			return err
		}},
		{"Unclaimed", "", staffOnly, func(ctx context.Context, p *control.Plane, c control.Caller) error {
			_, err := p.Unclaimed(ctx, c, 0, "")
			return err
		}},
	}
}

// notActions are the Plane's exported methods that act for nobody: they
// take no Caller, so there is no role to judge.
var notActions = map[string]string{
	"Authenticate":     "turns a token into a Caller",
	"AuthenticateHash": "turns a credential's hash into a Caller",
	"LookUp":           "looks up a credential before there is a Caller",
	"SignInPerson":     "turns a person the identity provider vouched for into a Caller",
	"SignIn":           "turns a token into a Caller and its console session",
	"Session":          "looks up a console session before there is a Caller",
	"Stated":           "adds its state to a consumer an action returned",
	"SecretCount":      "counts the secrets of a connection an action returned",
	"SealStoredURLs":   "the server's own start, before anyone is served",
	"BulkMax":          "the server's --bulk-max, which a page shows before an action",
	"Runner":           "the server's own job runner, which carries out what callers started",
}

// Every action and read of the control plane refuses a role below the one
// it needs with 403 forbidden, and lets the roles at or above it through;
// staff may do everything, and an org's caller without a role nothing. A
// method added to the Plane without a row here fails the test.
func TestEveryControlActionRefusesTheRolesBelowItsOwnWith403(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	org, _, err := e.ctl.CreateOrg(ctx, e.staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	as := func(r intake.Role) control.Caller {
		return control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_" + string(r), OrgName: org.Name, Role: r}
	}
	callers := []struct {
		name string
		c    control.Caller
		may  func(need intake.Role) bool
	}{
		{"no role", as(""), func(intake.Role) bool { return false }},
		{"viewer", as(intake.RoleViewer), func(n intake.Role) bool { return n == intake.RoleViewer }},
		{"operator", as(intake.RoleOperator), func(n intake.Role) bool { return n == intake.RoleViewer || n == intake.RoleOperator }},
		{"admin", as(intake.RoleAdmin), func(n intake.Role) bool { return n != staffOnly }},
		{"staff", e.staff, func(intake.Role) bool { return true }},
	}

	rows := roleRows(org.ID)
	listed := map[string]bool{}
	for _, row := range rows {
		listed[row.method] = true
		for _, who := range callers {
			err := row.call(ctx, e.ctl, who.c)
			refused := intake.ErrorCode(err) == intake.EFORBIDDEN
			switch {
			case who.may(row.need) && refused:
				t.Errorf("%s %s: a %s is refused (%v); it needs %s", row.method, row.what, who.name, err, row.need)
			case !who.may(row.need) && !refused:
				t.Errorf("%s %s: a %s got %v, want 403 forbidden; it needs %s", row.method, row.what, who.name, err, row.need)
			case refused && control.HTTPStatus(err) != http.StatusForbidden:
				t.Errorf("%s: refused with status %d, want 403", row.method, control.HTTPStatus(err))
			case refused && row.need != staffOnly && who.c.Role != "" &&
				!strings.Contains(intake.ErrorMessage(err), "needs the "+string(row.need)+" role"):
				t.Errorf("%s: refused with %q, which does not name the role it needs", row.method, intake.ErrorMessage(err))
			}
		}
	}

	callerType := reflect.TypeOf(control.Caller{})
	plane := reflect.TypeOf(e.ctl)
	for i := range plane.NumMethod() {
		m := plane.Method(i)
		takesCaller := false
		for j := range m.Type.NumIn() {
			takesCaller = takesCaller || m.Type.In(j) == callerType
		}
		_, exempt := notActions[m.Name]
		switch {
		case listed[m.Name] && exempt:
			t.Errorf("Plane.%s is both an action in the table and not an action", m.Name)
		case listed[m.Name]:
		case exempt && !takesCaller:
		default:
			t.Errorf("Plane.%s has no row in the roles table: every action and read of the Plane names the role it needs", m.Name)
		}
		delete(listed, m.Name)
	}
	for name := range listed {
		t.Errorf("the roles table lists %s, which the Plane does not have", name)
	}
}

// The roles a caller may act with are what transports show: Can says
// what the Plane would let through, without calling it.
func TestCanAnswersAsThePlaneJudges(t *testing.T) {
	viewer := control.Caller{Scope: intake.Scope{OrgID: intake.NewID()}, Actor: "key:ik_v", Role: intake.RoleViewer}
	operator := viewer
	operator.Role = intake.RoleOperator
	staff := control.Caller{Actor: "staff"}
	noRole := viewer
	noRole.Role = ""
	for _, c := range []struct {
		who  control.Caller
		need intake.Role
		want bool
	}{
		{viewer, intake.RoleViewer, true},
		{viewer, intake.RoleOperator, false},
		{operator, intake.RoleOperator, true},
		{operator, intake.RoleAdmin, false},
		{staff, intake.RoleAdmin, true},
		{noRole, intake.RoleViewer, false},
		{staff.Within(viewer.Scope.OrgID), intake.RoleAdmin, true},
		{viewer.Within(intake.NewID()), intake.RoleOperator, false},
	} {
		if got := c.who.Can(c.need); got != c.want {
			t.Errorf("%s (%q) can %s: %v, want %v", c.who.Actor, c.who.Role, c.need, got, c.want)
		}
	}
}
