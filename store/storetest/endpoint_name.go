package storetest

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

// testEndpointName: the name `intake apply` matches an endpoint by is
// stored on create, read back by every read, changed by an update and
// unique among a connection's live endpoints.
func testEndpointName(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	if f.ep.Name != "" {
		t.Fatalf("fixture endpoint named %q", f.ep.Name)
	}
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: f.org.ID, ConnectionID: f.conn.ID, Name: "primary", TokenHash: []byte("named-" + f.org.ID),
		Enabled: true, MaxBodyBytes: 1024, CreatedAt: t0}
	if err := s.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	got, err := s.Endpoint(ctx, intake.Scope{OrgID: f.org.ID}, ep.ID)
	if err != nil || got.Name != "primary" {
		t.Fatalf("created = %+v %v", got, err)
	}
	got.Name = "secondary"
	if err := s.UpdateEndpoint(ctx, intake.Scope{OrgID: f.org.ID}, got); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListEndpoints(ctx, intake.Scope{OrgID: f.org.ID})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, e := range list {
		names[e.ID] = e.Name
	}
	if names[ep.ID] != "secondary" || names[f.ep.ID] != "" {
		t.Fatalf("listed names = %v", names)
	}
	byToken, err := s.EndpointByTokenHash(ctx, ep.TokenHash)
	if err != nil || byToken.Name != "secondary" {
		t.Fatalf("by token = %+v %v", byToken, err)
	}
	// A name is one endpoint's among a connection's live ones, even when
	// two writers race past control's check.
	twin := ep
	twin.ID, twin.Name, twin.TokenHash = intake.NewID(), "secondary", []byte("twin-"+f.org.ID)
	if err := s.CreateEndpoint(ctx, twin); intake.ErrorCode(err) != intake.ECONFLICT {
		t.Fatalf("a second endpoint of the connection took the name: %v, want conflict", err)
	}
	if err := s.Delete(ctx, intake.Scope{}, intake.DeleteEndpoint, ep.ID, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateEndpoint(ctx, twin); err != nil {
		t.Fatalf("the name of a deleted endpoint is not free: %v", err)
	}
}
