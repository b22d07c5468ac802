package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/testkit"
)

// TestReplicatedServerSurvivesTheLossOfItsMachine replicates the store to
// S3 (SeaweedFS) with --replicate-sync, posts webhooks from several
// clients, kills the server with SIGKILL while they post, deletes its data
// directory, restores the store into a new one and starts there: every
// acknowledged webhook is stored once, and each reaches the consumer
// under one event id (a call repeated after the restore carries the same
// id, for the consumer to deduplicate).
func TestReplicatedServerSurvivesTheLossOfItsMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the real binary")
	}
	skipOnPostgres(t, "--replicate ships the embedded store")
	u := testkit.S3URL(t, testkit.S3Endpoint(t))
	// Litestream's S3 client cannot use a CA bundle; the master key is
	// kept apart from the replica, as the README says.
	env := []string{"AWS_CA_BUNDLE=", "INTAKE_MASTER_KEY=" + strings.Repeat("ab", 32)}
	replicate := []string{"--replicate", u, "--replicate-sync"}

	var mu sync.Mutex
	seen := map[string]map[string]bool{} // webhook id → event ids the consumer received
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			ID   string
			Data struct{ ID string }
		}
		if err := json.NewDecoder(r.Body).Decode(&env); err != nil || env.Data.ID == "" {
			http.Error(w, "bad envelope", http.StatusBadRequest)
			return
		}
		mu.Lock()
		if seen[env.Data.ID] == nil {
			seen[env.Data.ID] = map[string]bool{}
		}
		seen[env.Data.ID][env.ID] = true
		mu.Unlock()
	}))
	defer consumer.Close()

	data := t.TempDir()
	s := launch(t, env, data, replicate...)
	s.waitServing(t)
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "none", "name": "hooks",
		"config": map[string]any{"script": `function interpret(request) {
			return [{id: request.json.id, type: "hook.done", data: request.json}];
		}`}}, &conn)
	var ep struct{ Token string }
	s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &ep)
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org.ID, "name": "app", "app": "app",
		"url": consumer.URL, "event_types": []string{"*"}}, nil)

	acked := map[string]bool{}
	var ackMu sync.Mutex
	var seq, acks atomic.Int64
	client := &http.Client{Timeout: 10 * time.Second}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				id := fmt.Sprintf("hook-%d", seq.Add(1))
				req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/webhooks/"+ep.Token, strings.NewReader(fmt.Sprintf(`{"id":%q}`, id)))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue // killed mid-request: not acknowledged
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ackMu.Lock()
					acked[id] = true
					ackMu.Unlock()
					acks.Add(1)
				}
			}
		})
	}
	eventually(t, 60*time.Second, "200 acknowledgements", func() bool { return acks.Load() >= 200 })
	s.kill() // while the clients are still posting
	stop()
	wg.Wait()
	// The machine is lost.
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}

	data = t.TempDir()
	restore := exec.Command(binary, "restore", "--from", u, "--data", data)
	restore.Env = append(os.Environ(), env...)
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("intake restore: %v\n%s", err, out)
	}
	s = launch(t, env, data, replicate...)
	s.waitServing(t)
	stored := map[string]int{}
	for _, m := range s.settledMessages(t) {
		stored[m.ProviderEventID]++
	}
	lost := 0
	for id := range acked {
		if stored[id] != 1 {
			lost++
			t.Errorf("acknowledged %s stored %d times after the restore", id, stored[id])
		}
	}
	eventually(t, 60*time.Second, "every event delivered", func() bool {
		for _, e := range s.events(t) {
			if e.State != "delivered" {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for id := range acked {
		if len(seen[id]) != 1 {
			t.Errorf("acknowledged %s reached the consumer under %d event ids, want 1", id, len(seen[id]))
		}
	}
	t.Logf("%d acknowledged before the kill, %d stored after the restore, %d of the acknowledged missing", len(acked), len(stored), lost)
}
