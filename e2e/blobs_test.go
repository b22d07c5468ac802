package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/sweeper"
)

// blobThreshold is the servers' --blob-threshold here: small, so bodies
// of a few hundred KiB exercise object storage.
const blobThreshold = 64 << 10

// largeGitHubDelivery is a signed GitHub delivery of about size bytes.
func largeGitHubDelivery(url, id string, size int) (*http.Request, []byte) {
	body := fmt.Appendf(nil, `{"action":"opened","delivery":%q,"repository":{"node_id":"R_1"},"pad":"%s"}`, id,
		strings.Repeat("x", size))
	mac := hmac.New(sha256.New, []byte(githubSecret))
	mac.Write(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return req, body
}

// postLargeGitHub posts to path on s one signed GitHub delivery of each
// size, named prefix-0, prefix-1, and so on, each acknowledged with 200,
// and returns the bodies it sent by delivery id.
func postLargeGitHub(t *testing.T, s *server, path, prefix string, sizes ...int) map[string][]byte {
	t.Helper()
	sent := map[string][]byte{}
	for i, size := range sizes {
		id := fmt.Sprintf("%s-%d", prefix, i)
		req, body := largeGitHubDelivery(s.url+path, id, size)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d, want 200", id, resp.StatusCode)
		}
		sent[id] = body
	}
	return sent
}

// setupLargeGitHub is setupGitHub with an endpoint that takes 4 MiB.
func setupLargeGitHub(t *testing.T, s *server) string {
	t.Helper()
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "github", "name": "gh",
		"secrets": []string{githubSecret}}, &conn)
	var ep struct{ Token string }
	if code := s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0,
		"max_body_bytes": 4 << 20}, &ep); code != http.StatusCreated {
		t.Fatalf("create endpoint: %d", code)
	}
	return "/webhooks/" + ep.Token
}

// rawBody reads a message's body through the admin API.
func (s *server) rawBody(t *testing.T, id string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/api/v1/messages/"+id+"/body", nil)
	req.Header.Set("Authorization", "Bearer "+staffToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("body of %s: %d %s", id, resp.StatusCode, b)
	}
	return b
}

// objectKeys lists the objects under a blob-store URL.
func objectKeys(t *testing.T, u string) []string {
	t.Helper()
	b, err := blob.OpenURL(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := b.List(context.Background(), "", "\xff", 100000)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// TestKilledServerLosesNoAcknowledgedLargeBodyAndLeavesOnlySweepableOrphans
// posts bodies that go to object storage from several clients, kills the
// server with SIGKILL while they stream, restarts it on the same data, and
// repeats. Every delivery that got a 2xx is stored once, processed from
// its object, and served back whole; every object no message names (a body
// written before a commit the kill prevented) is an orphan the blob
// sweeper deletes once it is an hour old, and it deletes nothing else.
// It does so with object storage, and with the embedded store's own
// spool, the files beside it that take large bodies without --blob-store.
func TestKilledServerLosesNoAcknowledgedLargeBodyAndLeavesOnlySweepableOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the real binary")
	}
	t.Run("s3", func(t *testing.T) {
		blobURL := testkit.S3URL(t, testkit.S3Endpoint(t))
		killedServerLosesNoLargeBody(t, t.TempDir(), blobURL, "--blob-store", blobURL)
	})
	if !onPostgres() {
		t.Run("spool", func(t *testing.T) {
			data := t.TempDir()
			killedServerLosesNoLargeBody(t, data, "file://"+filepath.Join(data, "bodies"))
		})
	}
}

// killedServerLosesNoLargeBody is the test above, for the blob store at
// blobURL that the servers on data, started with flags, keep bodies in.
func killedServerLosesNoLargeBody(t *testing.T, data, blobURL string, flags ...string) {
	flags = append(flags, "--blob-threshold", fmt.Sprint(blobThreshold))
	s := start(t, data, flags...)
	path := setupLargeGitHub(t, s)

	var mu sync.Mutex
	acked := map[string]int{} // delivery id → body size
	var seq atomic.Int64
	client := &http.Client{Timeout: 20 * time.Second}
	const rounds, clients, perRound = 3, 4, 12
	for round := range rounds {
		if round > 0 {
			s = start(t, data, flags...)
		}
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var roundAcks atomic.Int64
		for c := range clients {
			wg.Go(func() {
				for ctx.Err() == nil {
					n := seq.Add(1)
					id := fmt.Sprintf("large-%d", n)
					size := blobThreshold + int(n%7)*(300<<10) + c*1000
					req, body := largeGitHubDelivery(s.url+path, id, size)
					resp, err := client.Do(req.WithContext(ctx))
					if err != nil {
						continue // killed mid-request: not acknowledged
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode/100 == 2 {
						mu.Lock()
						acked[id] = len(body)
						mu.Unlock()
						roundAcks.Add(1)
					}
				}
			})
		}
		eventually(t, 90*time.Second, "acknowledgements this round", func() bool { return roundAcks.Load() >= perRound })
		s.kill() // while bodies are streaming into object storage
		stop()
		wg.Wait()
	}

	s = start(t, data, flags...)
	msgs := s.settledMessages(t)
	eventsOf := map[string]int{}
	for _, e := range s.events(t) {
		eventsOf[e.MessageID]++
	}
	stored, idOf := map[string]int{}, map[string]string{}
	for _, m := range msgs {
		if m.State != "processed" || eventsOf[m.ID] != 1 {
			t.Errorf("message %s (%s): %s/%s with %d events", m.ID, m.ProviderEventID, m.State, m.Outcome, eventsOf[m.ID])
		}
		stored[m.ProviderEventID]++
		idOf[m.ProviderEventID] = m.ID
	}
	checked := 0
	for id, size := range acked {
		if stored[id] != 1 {
			t.Errorf("acknowledged %s stored %d times", id, stored[id])
			continue
		}
		if checked < 5 {
			if b := s.rawBody(t, idOf[id]); len(b) != size {
				t.Errorf("body of %s served back as %d bytes, %d were acknowledged", id, len(b), size)
			}
			checked++
		}
	}
	if len(acked) < rounds*perRound {
		t.Fatalf("only %d acknowledged", len(acked))
	}

	// Every stored message names its object; the rest are orphans.
	named := map[string]bool{}
	for _, m := range msgs {
		named[m.ID] = true
	}
	keys := objectKeys(t, blobURL)
	var orphans []string
	for _, k := range keys {
		if !named[k[strings.LastIndex(k, "/")+1:]] {
			orphans = append(orphans, k)
		}
	}
	if len(keys)-len(orphans) != len(msgs) {
		t.Fatalf("%d objects named by the %d stored messages", len(keys)-len(orphans), len(msgs))
	}
	t.Logf("%d acknowledged, %d stored, %d orphaned objects over %d kills", len(acked), len(msgs), len(orphans), rounds)

	// The server stops; the sweeper, an hour and more on, deletes the
	// orphans and nothing a message names.
	s.kill()
	var st intake.BlobRefs
	if onPostgres() {
		st = testkit.PostgresAt(t, databaseFor(t, data))
	} else {
		sq, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(data, "intake.db")})
		if err != nil {
			t.Fatal(err)
		}
		defer sq.Close()
		st = sq
	}
	blobs, err := blob.OpenURL(context.Background(), blobURL)
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(time.Now().Add(2*time.Hour + time.Minute))
	sw := sweeper.NewBlobs(sweeper.BlobsConfig{Store: st, Blobs: blobs, Clock: clock})
	if _, n, err := sw.RunOnce(context.Background()); err != nil || n != len(orphans) {
		t.Fatalf("the sweeper deleted %d orphans (%v), want %d", n, err, len(orphans))
	}
	if left := objectKeys(t, blobURL); len(left) != len(msgs) {
		t.Fatalf("%d objects left after the sweep, want the %d the messages name", len(left), len(msgs))
	}
}

// TestLargeBodiesAreRefusedWhileObjectStorageIsDownAndSmallOnesAreNot puts
// object storage behind a relay the test cuts: while it is down, a body
// above the threshold is answered 503 and a small one is stored as ever;
// once it is back, large bodies are stored again, and every one
// acknowledged is processed from its object.
func TestLargeBodiesAreRefusedWhileObjectStorageIsDownAndSmallOnesAreNot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	endpoint := testkit.S3Endpoint(t)
	u, _ := url.Parse(endpoint)
	relay := testkit.NewProxy(t, u.Host)
	blobURL := testkit.S3URL(t, "http://"+relay.Addr())
	s := start(t, t.TempDir(), "--blob-store", blobURL, "--blob-threshold", fmt.Sprint(blobThreshold))
	path := setupLargeGitHub(t, s)
	post := func(id string, size int) int {
		t.Helper()
		req, _ := largeGitHubDelivery(s.url+path, id, size)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("post %s: %v", id, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("before", 1<<20); code != http.StatusOK {
		t.Fatalf("large body, object storage up: %d", code)
	}
	relay.Cut()
	if code := post("down-large", 1<<20); code != http.StatusServiceUnavailable {
		t.Fatalf("large body, object storage down: %d, want 503", code)
	}
	if code := post("down-small", 1<<10); code != http.StatusOK {
		t.Fatalf("small body, object storage down: %d, want 200", code)
	}
	relay.Restore(t)
	if code := post("after", 1<<20); code != http.StatusOK {
		t.Fatalf("large body, object storage back: %d", code)
	}
	got := map[string]string{}
	for _, m := range s.settledMessages(t) {
		got[m.ProviderEventID] = m.State
	}
	want := map[string]string{"before": "processed", "down-small": "processed", "after": "processed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("messages %v, want %v", got, want)
	}
	if n := value(s.scrape(t), "intake_ingress_requests_total", "result", "blob_store"); n != 1 {
		t.Fatalf("%v requests counted as refused for object storage, want 1", n)
	}
}
