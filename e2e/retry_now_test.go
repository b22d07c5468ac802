package e2e

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryNowDeliversAnEventWithoutWaitingItsBackoff has a consumer fail
// its first call and wait an hour for its next attempt; once it answers
// 200 again, POST /events/{id}/retry delivers the event at once, as its
// second attempt.
func TestRetryNowDeliversAnEventWithoutWaitingItsBackoff(t *testing.T) {
	cons, url := newRecordingConsumer(t, map[string][]int{"/down": {500}}, nil)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var c struct {
		ID string `json:"id"`
	}
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": "down", "app": "down",
		"url": url + "/down", "event_types": []string{"github.issues.*"}, "retry": map[string]any{"attempts": 5, "base": "1h"}}, &c)
	if status, b := postGitHub(t, http.DefaultClient, s.url+path, "retry-now-1"); status != http.StatusOK {
		t.Fatalf("ingress answered %d %s", status, b)
	}
	var d eventDetail
	eventually(t, 60*time.Second, "the event retrying", func() bool {
		evs := s.events(t)
		if len(evs) != 1 {
			return false
		}
		d = s.event(t, evs[0].ID)
		return d.State == "retrying"
	})
	if n := len(cons.callsTo("/down")); n != 1 {
		t.Fatalf("the consumer was called %d times, want 1", n)
	}

	var dry struct {
		Count int `json:"count"`
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	s.api(t, "POST", "/api/v1/consumers/"+c.ID+"/retry", map[string]any{"dry_run": true}, &dry)
	if dry.Count != 1 || len(dry.Items) != 1 || dry.Items[0].ID != d.ID {
		t.Fatalf("dry run = %+v, want the retrying event", dry)
	}
	var retried struct {
		Count int `json:"count"`
	}
	s.api(t, "POST", "/api/v1/events/"+d.ID+"/retry", nil, &retried)
	if retried.Count != 1 {
		t.Fatalf("retry made %d events due, want 1", retried.Count)
	}
	eventually(t, 30*time.Second, "the event delivered", func() bool {
		d = s.event(t, d.ID)
		return d.State == "delivered"
	})
	if n := len(cons.callsTo("/down")); n != 2 {
		t.Errorf("the consumer was called %d times, want 2", n)
	}
	if last := d.Deliveries[len(d.Deliveries)-1]; len(d.Deliveries) != 2 || last.Outcome != "handled" || last.Attempt != 2 {
		t.Errorf("deliveries %+v, want the retry handled as attempt 2", d.Deliveries)
	}
}
