package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestCLIListsShowsAcknowledgesAndDismissesIssues(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	now := time.Now().UTC().Truncate(time.Second)
	consumerID := intake.NewID()
	i := intake.Issue{ID: intake.IssueID(org.ID, intake.IssueDelivery, consumerID, "timeout"), OrgID: org.ID, Kind: intake.IssueDelivery,
		Status: intake.IssueOpen, ConsumerID: consumerID, SubjectName: "billing", Cause: "timeout", Count: 3, Events: 2, FirstSeenAt: now,
		LastSeenAt: now, OpenedAt: now, LastError: "timeout", UpdatedAt: now}
	if err := s.store.WriteIssues(context.Background(), []intake.IssueWrite{{Issue: i, AddCount: 3, AddEvents: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	out, err := s.run(t, org.APIKey, "issues", "list", "--status", "open")
	if err != nil || !strings.Contains(out, i.ID) || !strings.Contains(out, "consumer billing") || !strings.Contains(out, "timeout") {
		t.Fatalf("issues list: %v\n%s", err, out)
	}
	out, err = s.run(t, org.APIKey, "issues", "show", i.ID)
	if err != nil || !strings.Contains(out, "3 calls over 2 events") || !strings.Contains(out, "LAST FAILED") {
		t.Fatalf("issues show: %v\n%s", err, out)
	}
	acked := decodeOut[api.Issue](t, s.mustRunJSON(t, org.APIKey, "issues", "ack", i.ID))
	if acked.Status != "acknowledged" {
		t.Fatalf("ack: %+v", acked)
	}
	if out, _ := s.run(t, org.APIKey, "issues", "list", "--status", "open"); strings.Contains(out, i.ID) {
		t.Fatalf("an acknowledged issue is listed open:\n%s", out)
	}
	if d := decodeOut[api.Issue](t, s.mustRunJSON(t, org.APIKey, "issues", "dismiss", i.ID)); d.Status != "dismissed" {
		t.Fatalf("dismiss: %+v", d)
	}
	if _, err := s.run(t, org.APIKey, "issues", "ack", i.ID); err == nil || !strings.Contains(err.Error(), "reopens by itself") {
		t.Fatalf("acknowledging a dismissed issue: %v", err)
	}
}
