package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/testkit"
)

// TestARestoredStoreNamesOnlyObjectsThatExistAndRestoresWithoutTheBlobStore
// replicates the store to S3 (SeaweedFS) with --replicate-sync and keeps
// large bodies in a blob store of their own (another prefix, behind a
// proxy that can cut it), loses the machine after large and small
// webhooks were acknowledged, and rebuilds it while the blob store cannot
// be reached: intake restore needs only the replica, and the server starts
// on the restored store all the same. Once the blob store is back, every
// message the restored store holds is processed from its body and serves
// it whole: it names no object that is not there.
func TestARestoredStoreNamesOnlyObjectsThatExistAndRestoresWithoutTheBlobStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the real binary")
	}
	skipOnPostgres(t, "--replicate ships the embedded store")
	endpoint := testkit.S3Endpoint(t)
	u := testkit.S3URL(t, endpoint)
	blobs := testkit.S3URL(t, endpoint)
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, target.Host)
	blobsViaProxy := strings.Replace(blobs, url.QueryEscape(endpoint), url.QueryEscape("http://"+proxy.addr), 1)
	if blobsViaProxy == blobs {
		t.Fatalf("the blob store URL %s names no endpoint to replace", blobs)
	}
	env := []string{"AWS_CA_BUNDLE=", "INTAKE_MASTER_KEY=" + strings.Repeat("cd", 32)}
	flags := []string{"--replicate", u, "--replicate-sync", "--blob-store", blobsViaProxy, "--blob-threshold", fmt.Sprint(blobThreshold)}

	data := t.TempDir()
	s := launch(t, env, data, flags...)
	s.waitServing(t)
	path := setupLargeGitHub(t, s)
	sizes := make([]int, 8)
	for i := range sizes {
		sizes[i] = 1 << 10
		if i%2 == 0 {
			sizes[i] = 3 * blobThreshold // in the blob store
		}
	}
	sent := postLargeGitHub(t, s, path, "hook", sizes...)
	if keys := objectKeys(t, blobs); len(keys) != 4 {
		t.Fatalf("%d objects in the blob store, want the 4 large bodies': %v", len(keys), keys)
	}
	s.kill()
	// The machine is lost, and the blob store cannot be reached.
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	proxy.cut()

	data = t.TempDir()
	restore := exec.Command(binary, "restore", "--from", u, "--data", data)
	restore.Env = append(os.Environ(), env...)
	start := time.Now()
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("intake restore with the blob store unreachable: %v\n%s", err, out)
	}
	t.Logf("restored in %v with the blob store unreachable", time.Since(start).Round(time.Millisecond))
	s = launch(t, env, data, flags...)
	s.waitServing(t)

	proxy.restore(t)
	msgs := s.settledMessages(t)
	stored := map[string]bool{}
	for _, m := range msgs {
		stored[m.ProviderEventID] = true
		if m.State != "processed" {
			t.Errorf("message %s (%s) is %s after the restore, want processed from its body", m.ID, m.ProviderEventID, m.State)
		}
		body := s.rawBody(t, m.ID)
		if want, ok := sent[m.ProviderEventID]; ok && !bytes.Equal(body, want) {
			t.Errorf("%s: the restored store serves %d bytes, want the %d sent", m.ProviderEventID, len(body), len(want))
		}
	}
	for id := range sent {
		if !stored[id] {
			t.Errorf("acknowledged %s is not in the restored store", id)
		}
	}
}
