package api_test

import (
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestSubjectLinkGivesLaterEventsAboutTheObjectTheirSubject(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	link := must[api.SubjectLink](e, 201, "POST", "/api/v1/subject-links", acme.org.APIKey, api.CreateSubjectLinkRequest{
		ConnectionID: acme.conn.ID, ProviderObjectID: "in_123", App: "billing", RecordID: "invoice-42",
	})
	if !intake.ValidID(link.ID) || link.OrgID != acme.org.ID || link.ConnectionID != acme.conn.ID || link.ProviderObjectID != "in_123" ||
		link.App != "billing" || link.RecordID != "invoice-42" || !link.CreatedAt.Equal(t0) {
		t.Fatalf("link: %+v", link)
	}

	about := e.event(acme, "apitest.invoice.paid", "in_999", "in_123")
	got := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+about.ID, acme.org.APIKey, nil)
	if got.Subject == nil || *got.Subject != (intake.Subject{App: "billing", RecordID: "invoice-42"}) {
		t.Fatalf("subject of an event about the linked object: %+v", got.Subject)
	}
	other := e.event(acme, "apitest.invoice.paid", "in_999")
	if got := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+other.ID, acme.org.APIKey, nil); got.Subject != nil {
		t.Fatalf("an event about an unlinked object has subject %+v", got.Subject)
	}

	// A later link of the same object replaces the earlier.
	must[api.SubjectLink](e, 201, "POST", "/api/v1/subject-links", staffToken, api.CreateSubjectLinkRequest{
		ConnectionID: acme.conn.ID, ProviderObjectID: "in_123", App: "crm", RecordID: "deal-7",
	})
	again := e.event(acme, "apitest.invoice.paid", "in_123")
	if got := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+again.ID, acme.org.APIKey, nil); got.Subject == nil || got.Subject.App != "crm" {
		t.Fatalf("subject after relinking: %+v", got.Subject)
	}
}

func TestSubjectLinkToAnotherOrgsConnectionIs404AndRecordsNothing(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	wantError(t, e.do("POST", "/api/v1/subject-links", acme.org.APIKey, api.CreateSubjectLinkRequest{
		ConnectionID: globex.conn.ID, ProviderObjectID: "in_1", App: "billing", RecordID: "r1",
	}), 404, intake.ENOTFOUND, "not found")
	wantError(t, e.do("POST", "/api/v1/subject-links", staffToken, api.CreateSubjectLinkRequest{
		ConnectionID: intake.NewID(), ProviderObjectID: "in_1", App: "billing", RecordID: "r1",
	}), 404, intake.ENOTFOUND, "not found")

	ev := e.event(globex, "apitest.invoice.paid", "in_1")
	if got := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+ev.ID, globex.org.APIKey, nil); got.Subject != nil {
		t.Fatalf("acme's refused link reached globex's events: %+v", got.Subject)
	}
}

func TestSubjectLinkNeedsEveryField(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	full := api.CreateSubjectLinkRequest{ConnectionID: acme.conn.ID, ProviderObjectID: "in_1", App: "billing", RecordID: "r1"}
	cases := []struct {
		edit func(*api.CreateSubjectLinkRequest)
		want string
	}{
		{func(r *api.CreateSubjectLinkRequest) { r.ConnectionID = "" }, "connection_id is required"},
		{func(r *api.CreateSubjectLinkRequest) { r.ConnectionID = "conn_1" }, `connection_id "conn_1" is not a valid id`},
		{func(r *api.CreateSubjectLinkRequest) { r.ProviderObjectID = "" }, "provider_object_id is required"},
		{func(r *api.CreateSubjectLinkRequest) { r.App = "" }, "app is required"},
		{func(r *api.CreateSubjectLinkRequest) { r.RecordID = "  " }, "record_id is required"},
	}
	for _, c := range cases {
		r := full
		c.edit(&r)
		wantError(t, e.do("POST", "/api/v1/subject-links", acme.org.APIKey, r), 400, intake.EINVALID, c.want)
	}
}
