package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestARotatedEndpointAnswersAtTheOldURLForTheOverlapAndAtTheNewOne: after
// `intake endpoints rotate --overlap 1h` both URLs are acknowledged and
// processed; after a rotation with --overlap 0s the URL it replaced, and
// the one before, answer 404 while the newest works.
func TestARotatedEndpointAnswersAtTheOldURLForTheOverlapAndAtTheNewOne(t *testing.T) {
	s := start(t, t.TempDir())
	first := setupGitHub(t, s)
	var eps struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/endpoints", nil, &eps)
	if len(eps.Items) != 1 {
		t.Fatalf("%d endpoints, want 1", len(eps.Items))
	}
	id := eps.Items[0].ID
	rotate := func(overlap string) string {
		t.Helper()
		var r struct{ ID, Token, URL string }
		out := s.cli(t, "endpoints", "rotate", id, "--overlap", overlap, "--json")
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID != id || r.Token == "" || !strings.HasSuffix(r.URL, "/webhooks/"+r.Token) {
			t.Fatalf("endpoints rotate --overlap %s: %+v %v\n%s", overlap, r, err, out)
		}
		return "/webhooks/" + r.Token
	}
	post := func(path, delivery string) int {
		t.Helper()
		resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, delivery))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	second := rotate("1h")
	if code := post(first, "old-1"); code != http.StatusOK {
		t.Fatalf("the old URL within the overlap answered %d", code)
	}
	if code := post(second, "new-1"); code != http.StatusOK {
		t.Fatalf("the new URL answered %d", code)
	}
	if msgs := s.settledMessages(t); len(msgs) != 2 {
		t.Fatalf("%d messages, want the 2 posted to both URLs", len(msgs))
	}

	third := rotate("0s")
	for _, path := range []string{first, second} {
		if code := post(path, "after-0s"); code != http.StatusNotFound {
			t.Fatalf("a replaced URL after a rotation with overlap 0s answered %d, want 404", code)
		}
	}
	if code := post(third, "new-2"); code != http.StatusOK {
		t.Fatalf("the newest URL answered %d", code)
	}
	if msgs := s.settledMessages(t); len(msgs) != 3 {
		t.Fatalf("%d messages, want 3", len(msgs))
	}
}
