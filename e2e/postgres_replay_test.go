package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestWindowReplayAskedOfOneProcessIsReportedByAnother runs two processes
// on one PostgreSQL, as behind a load balancer: a window replay asked of
// one is carried out by whichever claims it, and the other reports its
// progress to the end.
func TestWindowReplayAskedOfOneProcessIsReportedByAnother(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	procs, _ := onePostgres(t, 2)
	a, b := procs[0], procs[1]
	path := setupGitHub(t, a)
	from := time.Now().UTC().Add(-time.Minute)
	client := &http.Client{Timeout: 30 * time.Second}
	const n = 60 // more than one batch of a replay
	for i := range n {
		if status, body := postGitHub(t, client, a.url+path, fmt.Sprintf("r-%d", i)); status != http.StatusOK {
			t.Fatalf("post %d: %d %s", i, status, body)
		}
	}
	var eps struct{ Items []struct{ ID string } }
	b.api(t, "GET", "/api/v1/endpoints", nil, &eps)
	var job struct {
		Count    int    `json:"count"`
		ReplayID string `json:"replay_id"`
	}
	if status := b.api(t, "POST", "/api/v1/endpoints/"+eps.Items[0].ID+"/replay",
		map[string]any{"since": from, "until": time.Now().UTC().Add(time.Minute)}, &job); status != http.StatusAccepted || job.Count != n {
		t.Fatalf("replay asked of b: %d %+v", status, job)
	}
	var p struct {
		Total, Done int
		Finished    bool
		Error       string
	}
	eventually(t, 30*time.Second, "a reports the replay b was asked for as finished", func() bool {
		if status := a.api(t, "GET", "/api/v1/replays/"+job.ReplayID, nil, &p); status != http.StatusOK {
			t.Fatalf("a answered %d for the replay", status)
		}
		return p.Finished
	})
	if p.Done != n || p.Total != n || p.Error != "" {
		t.Fatalf("replay ended as %+v, want all %d replayed", p, n)
	}
	var msgs struct {
		Items []struct {
			ReplayOf string `json:"replay_of"`
		}
	}
	a.api(t, "GET", "/api/v1/messages?limit=500", nil, &msgs)
	replays := map[string]int{}
	for _, m := range msgs.Items {
		if m.ReplayOf != "" {
			replays[m.ReplayOf]++
		}
	}
	if len(replays) != n {
		t.Fatalf("%d originals replayed, want %d", len(replays), n)
	}
	for id, k := range replays {
		if k != 1 {
			t.Errorf("original %s replayed %d times", id, k)
		}
	}
}
