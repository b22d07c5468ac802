package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size (e.g. "16m") on a fresh directory and
// unmounts it at cleanup, after the server started later has been killed.
// Mounting needs root; outside CI the test is skipped without it.
// tmpfsSize is small, yet larger than the 4 MB the WAL may grow to before
// it is copied into the database and started over: on a file system
// smaller than that, the WAL fills it before it is ever reset.
const tmpfsSize = "16m"

func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a %s tmpfs: %v (CI must run this test as root)", size, err)
		}
		t.Skipf("cannot mount a tmpfs (%v): this test needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		// Processes stopped just before (a server, PostgreSQL's backends
		// after an immediate stop) may hold files on it for a moment more.
		err := syscall.Unmount(dir, 0)
		for deadline := time.Now().Add(10 * time.Second); errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			err = syscall.Unmount(dir, 0)
		}
		if err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fillFileSystem writes path until the file system holding it is full.
func fillFileSystem(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			return
		}
	}
}

// TestFullDiskRefusesWebhooksAndRecoversWithoutRestart runs intake on a
// small tmpfs, fills it, and posts webhooks: ingress answers 503 and
// acknowledges nothing it did not store. Once space is freed the same
// process accepts again, and every acknowledged webhook is processed.
func TestFullDiskRefusesWebhooksAndRecoversWithoutRestart(t *testing.T) {
	skipOnPostgres(t, "fills the file system under --data")
	if testing.Short() {
		t.Skip("starts the real binary on a tmpfs")
	}
	data := mountTmpfs(t, tmpfsSize)
	s := start(t, data)
	path := setupGitHub(t, s)
	client := &http.Client{Timeout: 30 * time.Second} // a hang guard
	acked := map[string]bool{}
	for i := range 5 {
		id := fmt.Sprintf("before-%d", i)
		if status, b := postGitHub(t, client, s.url+path, id); status != http.StatusOK {
			t.Fatalf("before the disk filled, ingress answered %d %s", status, b)
		}
		acked[id] = true
	}

	filler := filepath.Join(data, "filler")
	fillFileSystem(t, filler)
	refused := map[string]bool{}
	const wantRefused = 20
	for i := 0; i < 200 && len(refused) < wantRefused; i++ {
		id := fmt.Sprintf("full-%d", i)
		switch status, b := postGitHub(t, client, s.url+path, id); {
		case status/100 == 2:
			acked[id] = true // fitted in space the database already had: must be kept
		case status == http.StatusServiceUnavailable:
			if !bytes.Equal(b, []byte(`{"error":"temporarily unavailable"}`+"\n")) {
				t.Fatalf("503 answer %q reveals more than unavailability", b)
			}
			refused[id] = true
		default:
			t.Fatalf("on a full disk, ingress answered %d %s", status, b)
		}
	}
	if len(refused) < wantRefused {
		t.Fatalf("on a full disk only %d of %d webhooks were refused", len(refused), len(refused)+len(acked)-5)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	recovered := 0
	eventually(t, 30*time.Second, "ingress accepting again once space is back", func() bool {
		id := fmt.Sprintf("after-%d", recovered)
		recovered++
		status, b := postGitHub(t, client, s.url+path, id)
		if status/100 == 2 {
			acked[id] = true
			return true
		}
		if status != http.StatusServiceUnavailable {
			t.Fatalf("recovering, ingress answered %d %s", status, b)
		}
		return false
	})
	for i := range 20 {
		id := fmt.Sprintf("recovered-%d", i)
		if status, b := postGitHub(t, client, s.url+path, id); status != http.StatusOK {
			t.Fatalf("after recovery, ingress answered %d %s", status, b)
		}
		acked[id] = true
	}

	var msgs []message
	eventually(t, 60*time.Second, "every stored message processed", func() bool {
		msgs = s.messages(t)
		for _, m := range msgs {
			if m.State != "processed" {
				return false
			}
		}
		return true
	})
	stored := map[string]int{}
	for _, m := range msgs {
		stored[m.ProviderEventID]++
	}
	for id := range acked {
		if stored[id] != 1 {
			t.Errorf("acknowledged %s stored %d times", id, stored[id])
		}
	}
	storedRefused := 0
	for id := range refused {
		storedRefused += stored[id]
	}
	t.Logf("%d acknowledged, %d refused with 503 (%d of them stored anyway), recovered after %d attempts",
		len(acked), len(refused), storedRefused, recovered)
}

// TestFullDiskDeliversNoEventWithoutACommittedClaim keeps events retrying
// against a failing consumer, then fills the disk: a routing attempt whose
// claim cannot commit must not be sent, or every poll would call the
// consumer again with the same event for as long as the disk stays full.
// Once space is back and the consumer answers, every event is delivered.
func TestFullDiskDeliversNoEventWithoutACommittedClaim(t *testing.T) {
	skipOnPostgres(t, "fills the file system under --data")
	if testing.Short() {
		t.Skip("starts the real binary on a tmpfs")
	}
	data := mountTmpfs(t, tmpfsSize)
	var mu sync.Mutex
	calls := map[string]int{} // webhook-id → calls
	var healthy atomic.Bool
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls[r.Header.Get("webhook-id")]++
		mu.Unlock()
		if !healthy.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer consumer.Close()
	callsNow := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(calls)
	}

	s := start(t, data)
	path := setupGitHub(t, s)
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": "issues", "app": "tracker",
		"url": consumer.URL, "event_types": []string{"github.issues.*"}}, nil)
	const n = 5
	for i := range n {
		if status, b := postGitHub(t, http.DefaultClient, s.url+path, fmt.Sprintf("retrying-%d", i)); status != http.StatusOK {
			t.Fatalf("ingress answered %d %s", status, b)
		}
	}
	var evs []event
	eventually(t, 30*time.Second, "every event retrying after a failed delivery", func() bool {
		evs = s.events(t)
		if len(evs) != n {
			return false
		}
		for _, e := range evs {
			if e.State != "retrying" || callsNow()[e.ID] == 0 {
				return false
			}
		}
		return true
	})

	fillFileSystem(t, filepath.Join(data, "filler"))
	before := callsNow()
	// The events fall due again within a second; with the disk full no
	// claim of them can commit. Watch the consumer for a few router polls.
	time.Sleep(4 * time.Second)
	during := callsNow()
	for _, e := range evs {
		// One call may come from a claim committed just before the disk filled.
		if d := during[e.ID] - before[e.ID]; d > 1 {
			t.Errorf("event %s sent %d times while no claim could commit", e.ID, d)
		}
	}

	if err := os.Remove(filepath.Join(data, "filler")); err != nil {
		t.Fatal(err)
	}
	healthy.Store(true)
	eventually(t, 60*time.Second, "every event delivered once space is back", func() bool {
		for _, e := range s.events(t) {
			if e.State == "dead" {
				t.Fatalf("event %s dead", e.ID)
			}
			if e.State != "delivered" {
				return false
			}
		}
		return true
	})
}
