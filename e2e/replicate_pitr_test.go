package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAStoreRestoredToATimeServesEveryBodyItNamesFromANewReplica: a server
// replicating to a directory, with no --blob-store (large bodies go beside
// the replica), takes large webhooks; then, past a restore point T, their
// bodies are erased, and a restart sweeps object storage. The store
// restored to T into a new data directory names those bodies again, and a
// server on it replicating to a new place serves each of them byte for
// byte: the sweeper kept the objects a restore within --replicate-retention
// may name, and the restored store reads its bodies where they were
// written, not beside its new replica.
func TestAStoreRestoredToATimeServesEveryBodyItNamesFromANewReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the real binary")
	}
	skipOnPostgres(t, "--replicate ships the embedded store")
	dir := t.TempDir()
	old, next := "file://"+filepath.Join(dir, "old"), "file://"+filepath.Join(dir, "new")
	env := []string{"INTAKE_MASTER_KEY=" + strings.Repeat("ef", 32)}
	flags := func(replica string) []string {
		return []string{"--replicate", replica, "--replicate-sync", "--blob-threshold", fmt.Sprint(blobThreshold)}
	}

	data := filepath.Join(dir, "data")
	s := launch(t, env, data, flags(old)...)
	s.waitServing(t)
	path := setupLargeGitHub(t, s)
	var endpoints struct {
		Items []struct{ ID string }
	}
	s.api(t, "GET", "/api/v1/endpoints", nil, &endpoints)
	if len(endpoints.Items) != 1 {
		t.Fatalf("endpoints: %+v, want the one", endpoints.Items)
	}
	sent := postLargeGitHub(t, s, path, "large", 3*blobThreshold, 3*blobThreshold, 3*blobThreshold)
	s.settledMessages(t)
	bodies := old + "/bodies"
	if keys := objectKeys(t, bodies); len(keys) != len(sent) {
		t.Fatalf("%d objects beside the replica, want the %d large bodies': %v", len(keys), len(sent), keys)
	}
	// The restore point: every commit so far is in the replica
	// (--replicate-sync), the erasure comes after it.
	at := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(at) + 200*time.Millisecond)
	var erased struct{ Count int }
	s.api(t, "DELETE", "/api/v1/endpoints/"+endpoints.Items[0].ID+"/bodies?since="+
		url.QueryEscape(at.Add(-time.Hour).Format(time.RFC3339))+"&until="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)), nil, &erased)
	if erased.Count != len(sent) {
		t.Fatalf("erased %d bodies, want %d", erased.Count, len(sent))
	}
	// A restart sweeps object storage at once.
	s.kill()
	s = launch(t, env, data, flags(old)...)
	s.waitServing(t)
	eventually(t, 60*time.Second, "a sweep of object storage after the erasure", func() bool {
		return value(s.scrape(t), "intake_blob_sweeps_total", "result", "swept") > 0
	})
	t.Logf("after the erasure and a sweep, %d objects beside the old replica", len(objectKeys(t, bodies)))
	s.kill()

	restored := filepath.Join(dir, "restored")
	restore := exec.Command(binary, "restore", "--from", old, "--data", restored, "--to-time", at.Format(time.RFC3339))
	restore.Env = append(os.Environ(), env...)
	out, err := restore.CombinedOutput()
	if err != nil {
		t.Fatalf("intake restore --to-time: %v\n%s", err, out)
	}
	t.Logf("intake restore --to-time %s:\n%s", at.Format(time.RFC3339), out)
	s = launch(t, env, restored, flags(next)...)
	s.waitServing(t)
	got := map[string]bool{}
	for _, m := range s.settledMessages(t) {
		want, ok := sent[m.ProviderEventID]
		if !ok {
			t.Errorf("the restored store holds %s, never sent", m.ProviderEventID)
			continue
		}
		got[m.ProviderEventID] = true
		if body := s.rawBody(t, m.ID); !bytes.Equal(body, want) {
			t.Errorf("%s: the restored store serves %d bytes, want the %d sent", m.ProviderEventID, len(body), len(want))
		}
	}
	for id := range sent {
		if !got[id] {
			t.Errorf("%s, stored before the restore point, is not in the restored store", id)
		}
	}
	if keys := objectKeys(t, next+"/bodies"); len(keys) != 0 {
		t.Errorf("objects beside the new replica: %v, want none (the bodies stay where they were written)", keys)
	}
}
