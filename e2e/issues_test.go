package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// issueView is an issue as GET /api/v1/issues shows it.
type issueView struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	ConsumerID string `json:"consumer_id"`
	Subject    string `json:"subject_name"`
	Cause      string `json:"cause"`
	Count      int    `json:"count"`
	Events     int    `json:"events"`
}

func (s *server) issues(t *testing.T, query string) []issueView {
	t.Helper()
	var page struct{ Items []issueView }
	s.api(t, "GET", "/api/v1/issues"+query, nil, &page)
	return page.Items
}

// TestAConsumerAnswering500OpensOneIssueThatResolvesAndReopens: on the real
// binary, a consumer answering 500 opens one delivery issue that counts
// each failed call over the events they touched; once it answers 200 the
// issue resolves, and when it answers 500 again the same issue reopens.
// The org's URL is notified of each.
func TestAConsumerAnswering500OpensOneIssueThatResolvesAndReopens(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusInternalServerError)
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(int(status.Load()))
	}))
	defer consumer.Close()
	var mu sync.Mutex
	var noticed []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct{ Type string }
		json.NewDecoder(r.Body).Decode(&n)
		mu.Lock()
		noticed = append(noticed, n.Type)
		mu.Unlock()
	}))
	defer receiver.Close()

	s := start(t, t.TempDir(), "--notify-interval", "100ms")
	path := setupGitHub(t, s)
	org := firstOrgID(t, s)
	s.cli(t, "notifications", "set", "--org", org, "--url", receiver.URL, "--topic", "issue.opened", "--topic", "issue.resolved",
		"--topic", "issue.reopened")
	var c struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org, "name": "billing", "app": "billing", "url": consumer.URL,
		"event_types": []string{"github.*"}}, &c)
	// No breaker in the way: every call reaches the consumer.
	s.api(t, "PATCH", "/api/v1/consumers/"+c.ID, map[string]any{"breaker_failures": 1000}, nil)

	postGitHubN(t, s, path, "failing-", 2)
	eventually(t, 60*time.Second, "both events dead after their attempts", func() bool {
		evs := s.events(t)
		return len(evs) == 2 && evs[0].State == "dead" && evs[1].State == "dead"
	})
	failed := 0
	for _, e := range s.events(t) {
		for _, d := range s.event(t, e.ID).Deliveries {
			if d.StatusCode == 500 {
				failed++
			}
		}
	}
	open := s.issues(t, "?status=open")
	if len(open) != 1 {
		t.Fatalf("open issues %+v, want one", open)
	}
	first := open[0]
	if first.Kind != "delivery" || first.ConsumerID != c.ID || first.Subject != "billing" || first.Cause != "consumer answered 5xx" ||
		first.Count != failed || first.Events != 2 {
		t.Fatalf("issue %+v, want one delivery issue of billing counting the %d failed calls over 2 events", first, failed)
	}

	status.Store(http.StatusOK)
	postGitHubN(t, s, path, "healing-", 1)
	eventually(t, 30*time.Second, "the issue resolved by a 2xx", func() bool {
		all := s.issues(t, "")
		return len(all) == 1 && all[0].ID == first.ID && all[0].Status == "resolved"
	})

	status.Store(http.StatusInternalServerError)
	postGitHubN(t, s, path, "failing-again-", 1)
	eventually(t, 30*time.Second, "the same issue reopened", func() bool {
		all := s.issues(t, "?status=open")
		return len(all) == 1 && all[0].ID == first.ID && all[0].Count > failed && all[0].Events == 3
	})
	eventually(t, 30*time.Second, "the org's URL notified of the issue opening, resolving and reopening", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(noticed, "issue.opened") && slices.Contains(noticed, "issue.resolved") && slices.Contains(noticed, "issue.reopened")
	})
}
