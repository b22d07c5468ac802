package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake/internal/faults"
	"github.com/intakehq/intake/internal/testkit"
)

// largeBodySize is the size of the body posted as webhook id: above the
// blob threshold, up to four times it, the same on every retry.
func largeBodySize(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return blobThreshold + int(h.Sum32()%4)*blobThreshold
}

// TestNetworkFaultsBetweenIntakeAndObjectStorageLoseNothing runs network
// faults between intake and the object storage large bodies go to
// (--blob-store on SeaweedFS) while only large bodies arrive: a body is
// answered 2xx only once it is stored, and whole; while it cannot be, it
// is answered 503, never 500 nor left unanswered; every acknowledged
// webhook is processed from its object and delivered once the fault is
// removed; no warning is logged more than once per outage.
func TestNetworkFaultsBetweenIntakeAndObjectStorageLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	endpoint := testkit.S3Endpoint(t) // CI=true: fails when unreachable
	store := "sqlite"
	if onPostgres() {
		store = "postgres"
	}
	for _, name := range linkFaults {
		f, ok := faults.Find(name)
		if !ok {
			t.Fatalf("no fault %q", name)
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			proxied, proxy := faults.ProxiedURL(t, endpoint)
			blobURL := testkit.S3URL(t, proxied)
			app, consumer := appConsumer(t, providerEventOf)
			s := start(t, t.TempDir(), "--blob-store", blobURL, "--blob-threshold", fmt.Sprint(blobThreshold),
				"--store-wait", faultCampaign().storeWait.String())
			request := func(url, id string) *http.Request {
				req, _ := largeGitHubDelivery(url, id, largeBodySize(id))
				return req
			}
			tally := runFaultPosting(t, s, f, proxy, app.Sink, app, consumer.URL, setupLargeGitHub(t, s), request)
			checkTally(t, tally, "object storage link", store)
			checkLargeBodiesWhole(t, s, blobURL, tally.Acked)
			s.kill()
			checkOutageLogged(t, s)
		})
	}
}

// providerEventOf is the provider's event id (the GitHub delivery id) in
// a consumer call's envelope: there whether its data is or was left out
// as too large.
func providerEventOf(body []byte) string {
	var env struct {
		ProviderEventID string `json:"provider_event_id"`
	}
	json.Unmarshal(body, &env)
	return env.ProviderEventID
}

// checkLargeBodiesWhole fails the test unless the store holds one message
// per acknowledged webhook (acked of them), each processed, its object in
// the blob store at blobURL, and its body served back whole from it. An
// object no message names (a body stored whose commit never came) is an
// orphan, for the blob sweeper.
func checkLargeBodiesWhole(t *testing.T, s *server, blobURL string, acked int) {
	t.Helper()
	objects := map[string]bool{}
	for _, k := range objectKeys(t, blobURL) {
		objects[k[strings.LastIndex(k, "/")+1:]] = true
	}
	stored := map[string]int{}
	msgs := s.settledMessages(t)
	for _, m := range msgs {
		stored[m.ProviderEventID]++
		if m.State != "processed" {
			t.Errorf("message %s (%s) is %s/%s", m.ID, m.ProviderEventID, m.State, m.Outcome)
		}
		if !objects[m.ID] {
			t.Errorf("message %s (%s) names no object in the blob store", m.ID, m.ProviderEventID)
			continue
		}
		_, posted := largeGitHubDelivery(s.url, m.ProviderEventID, largeBodySize(m.ProviderEventID))
		if b := s.rawBody(t, m.ID); !bytes.Equal(b, posted) {
			t.Errorf("body of %s served back as %d bytes, not the %d posted", m.ProviderEventID, len(b), len(posted))
		}
	}
	for id, n := range stored {
		if n != 1 {
			t.Errorf("webhook %s stored %d times", id, n)
		}
	}
	if len(stored) != acked {
		t.Errorf("%d webhooks stored, %d acknowledged", len(stored), acked)
	}
	t.Logf("%d messages stored, each body whole; %d orphaned objects", len(msgs), len(objects)-len(msgs))
}
