package api_test

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// seedIssue writes an open delivery issue of a consumer, as a settle
// would, with one event as its item.
func (e *env) seedIssue(tn tenant, consumer api.Consumer) intake.Issue {
	e.t.Helper()
	now := e.clock.Now()
	i := intake.Issue{ID: intake.IssueID(tn.org.ID, intake.IssueDelivery, consumer.ID, "consumer answered 5xx"), OrgID: tn.org.ID,
		Kind: intake.IssueDelivery, Status: intake.IssueOpen, ConsumerID: consumer.ID, SubjectName: consumer.Name,
		Cause: "consumer answered 5xx", Count: 1, Events: 1, FirstSeenAt: now, LastSeenAt: now, OpenedAt: now,
		LastError: "consumer answered 500", SampleEventID: intake.NewID(), UpdatedAt: now}
	if err := e.store.WriteIssues(context.Background(), []intake.IssueWrite{{Issue: i, AddCount: 1, AddEvents: 1}}, nil); err != nil {
		e.t.Fatal(err)
	}
	return i
}

// Issues are listed with §20's fields, shown with their items, and moved by
// an operator's hand: a viewer reads them but may not acknowledge (403),
// another org's issue is not found (404), and a status other than open,
// acknowledged or dismissed is refused (400).
func TestIssuesAreListedShownAndMovedByAnOperator(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	other := e.newTenant("other")
	consumer := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, api.CreateConsumerRequest{Name: "billing", App: "billing",
		URL: "http://127.0.0.1:9/billing", EventTypes: []string{"*"}})
	seeded := e.seedIssue(acme, consumer)
	viewer := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Role: "viewer"})
	operator := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Role: "operator"})

	list := must[api.List[api.Issue]](e, 200, "GET", "/api/v1/issues?status=open&kind=delivery&consumer_id="+consumer.ID, viewer.Key, nil)
	if len(list.Items) != 1 {
		t.Fatalf("issues %+v, want one", list.Items)
	}
	i := list.Items[0]
	if i.ID != seeded.ID || i.Kind != "delivery" || i.Status != "open" || i.ConsumerID != consumer.ID || i.ConnectionID != "" ||
		i.SubjectName != "billing" || i.Cause != "consumer answered 5xx" || i.Count != 1 || i.Events != 1 || i.AcknowledgedAt != nil {
		t.Fatalf("issue %+v", i)
	}
	detail := must[api.IssueDetail](e, 200, "GET", "/api/v1/issues/"+i.ID, viewer.Key, nil)
	if detail.ID != i.ID || detail.Items == nil {
		t.Fatalf("detail %+v", detail)
	}
	if other := must[api.List[api.Issue]](e, 200, "GET", "/api/v1/issues", other.org.APIKey, nil); len(other.Items) != 0 {
		t.Fatalf("another org lists %+v", other.Items)
	}

	wantError(t, e.do("PATCH", "/api/v1/issues/"+i.ID, viewer.Key, api.UpdateIssueRequest{Status: "acknowledged"}), 403, intake.EFORBIDDEN,
		"needs the operator role")
	wantError(t, e.do("PATCH", "/api/v1/issues/"+i.ID, other.org.APIKey, api.UpdateIssueRequest{Status: "acknowledged"}), 404,
		intake.ENOTFOUND, "not found")
	wantError(t, e.do("GET", "/api/v1/issues/"+i.ID, other.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	wantError(t, e.do("PATCH", "/api/v1/issues/"+i.ID, operator.Key, api.UpdateIssueRequest{Status: "closed"}), 400, intake.EINVALID,
		"status must be open, acknowledged or dismissed")
	wantError(t, e.do("PATCH", "/api/v1/issues/"+i.ID, operator.Key, api.UpdateIssueRequest{Status: "resolved"}), 400, intake.EINVALID,
		"resolves by itself")
	wantError(t, e.do("GET", "/api/v1/issues?status=bogus", viewer.Key, nil), 400, intake.EINVALID, "status must be")
	wantError(t, e.do("GET", "/api/v1/issues?consumer_id=x", viewer.Key, nil), 400, intake.EINVALID, "consumer_id")
	wantError(t, e.do("GET", "/api/v1/issues?cursor=x", viewer.Key, nil), 400, intake.EINVALID, "cursor")

	acked := must[api.Issue](e, 200, "PATCH", "/api/v1/issues/"+i.ID, operator.Key, api.UpdateIssueRequest{Status: "acknowledged"})
	if acked.Status != "acknowledged" || acked.AcknowledgedAt == nil {
		t.Fatalf("acknowledged %+v", acked)
	}
	if open := must[api.List[api.Issue]](e, 200, "GET", "/api/v1/issues?status=open", viewer.Key, nil); len(open.Items) != 0 {
		t.Fatalf("?status=open lists an acknowledged issue: %+v", open.Items)
	}
	if d := must[api.Issue](e, 200, "PATCH", "/api/v1/issues/"+i.ID, operator.Key, api.UpdateIssueRequest{Status: "dismissed"}); d.Status != "dismissed" {
		t.Fatalf("dismissed %+v", d)
	}
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	actions := map[string]bool{}
	for _, a := range audit.Items {
		actions[a.Action] = a.TargetID == i.ID
	}
	if !actions["issue.acknowledge"] || !actions["issue.dismiss"] {
		t.Fatalf("audit %+v", audit.Items)
	}
}
