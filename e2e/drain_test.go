package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMDrainsAndExitsCleanly stops a server under load with SIGTERM:
// it must exit 0, and every webhook it acknowledged must be stored and,
// after a restart, processed.
func TestSIGTERMDrainsAndExitsCleanly(t *testing.T) {
	data := t.TempDir()
	s := start(t, data)
	path := setupGitHub(t, s)

	var mu sync.Mutex
	acked := map[string]bool{}
	var seq, answered atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				id := fmt.Sprintf("drain-%d", seq.Add(1))
				resp, err := client.Do(githubDelivery(s.url+path, id).WithContext(ctx))
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered.Add(1)
				if resp.StatusCode/100 == 2 {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
			}
		})
	}
	eventually(t, 30*time.Second, "some webhooks answered", func() bool { return answered.Load() >= 100 })
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(40 * time.Second): // a hang guard: the grace is 30 s
		t.Fatal("the server did not exit after SIGTERM")
	}
	stop()
	wg.Wait()
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, s.logs)
	}

	s = start(t, data)
	msgs := s.settledMessages(t)
	stored := map[string]int{}
	for _, m := range msgs {
		stored[m.ProviderEventID]++
	}
	for id := range acked {
		if stored[id] != 1 {
			t.Errorf("acknowledged %s stored %d times", id, stored[id])
		}
	}
	t.Logf("%d acknowledged before SIGTERM, all stored once", len(acked))
}

// TestSIGTERMEndsOpenEventStreams: a `listen` client attached to the event
// stream must not hold a shutdown for the whole grace period.
func TestSIGTERMEndsOpenEventStreams(t *testing.T) {
	s := start(t, t.TempDir(), "--shutdown-grace", "60s")
	req, _ := http.NewRequest("GET", s.url+"/api/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+staffToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream answered %d", resp.StatusCode)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(20 * time.Second): // the grace is 60 s: waiting for it fails here
		t.Fatal("an open event stream held the shutdown")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
