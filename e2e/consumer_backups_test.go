package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake/delivery"
)

// The end-to-end backups of three consumer behaviours each guarded by one
// test elsewhere: a pause that holds across a restart, a secret rotation's
// overlap and its end, and a consumer answering 410 Gone.

// call is one request a capturingConsumer received.
type call struct {
	header http.Header
	body   []byte
	at     time.Time
}

// capturingConsumer answers every call with one status and keeps each
// request it received.
type capturingConsumer struct {
	url    string
	status int
	mu     sync.Mutex
	calls  []call
}

func newCapturingConsumer(t *testing.T, status int) *capturingConsumer {
	c := &capturingConsumer{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.calls = append(c.calls, call{r.Header.Clone(), b, time.Now()})
		c.mu.Unlock()
		w.WriteHeader(c.status)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

func (c *capturingConsumer) received() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]call(nil), c.calls...)
}

// deliveryIDs are the GitHub delivery ids of the calls, each as often as
// it was received.
func (c *capturingConsumer) deliveryIDs(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, cl := range c.received() {
		var env struct {
			Data struct{ Delivery string } `json:"data"`
		}
		if err := json.Unmarshal(cl.body, &env); err != nil {
			t.Fatalf("a call's body %s: %v", cl.body, err)
		}
		out[env.Data.Delivery]++
	}
	return out
}

// signedBy reports which of the secrets a call's webhook-signature header
// verifies under, and how many signatures it carries.
func (cl call) signedBy(t *testing.T, secrets ...string) (verified []bool, signatures int) {
	t.Helper()
	ts, err := strconv.ParseInt(cl.header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp %q", cl.header.Get("webhook-timestamp"))
	}
	sigs := strings.Fields(cl.header.Get("webhook-signature"))
	for _, secret := range secrets {
		want, err := delivery.Sign(secret, cl.header.Get("webhook-id"), ts, cl.body)
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, s := range sigs {
			ok = ok || s == want
		}
		verified = append(verified, ok)
	}
	return verified, len(sigs)
}

// postWebhooks posts a signed GitHub delivery for each id; each must be
// taken.
func postWebhooks(t *testing.T, s *server, path string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if status, b := postGitHub(t, http.DefaultClient, s.url+path, id); status != http.StatusOK && status != http.StatusAccepted {
			t.Fatalf("ingress answered %d %s to %s", status, b, id)
		}
	}
}

// addConsumer registers a consumer of every GitHub event and returns its
// id and signing secret.
func addConsumer(t *testing.T, s *server, org, name, url string) (id, secret string) {
	t.Helper()
	var c struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org, "name": name, "app": name, "url": url,
		"event_types": []string{"github.*"}}, &c)
	if c.ID == "" || c.SigningSecret == "" {
		t.Fatalf("consumer %s created without an id or a secret: %+v", name, c)
	}
	return c.ID, c.SigningSecret
}

func (s *server) health(t *testing.T, consumerID string) health {
	t.Helper()
	var h health
	s.api(t, "GET", "/api/v1/consumers/"+consumerID+"/health", nil, &h)
	return h
}

// TestAPauseSetThroughTheAPIHoldsAcrossARestartAndResumeDeliversEveryHeldEvent:
// a consumer paused with PATCH {"paused": true} is called for nothing while
// another consumer gets every webhook, also after the process restarts
// over the same data; once PATCHed back, every held event reaches it
// exactly once and every event ends delivered.
func TestAPauseSetThroughTheAPIHoldsAcrossARestartAndResumeDeliversEveryHeldEvent(t *testing.T) {
	paused, other := newCapturingConsumer(t, http.StatusOK), newCapturingConsumer(t, http.StatusOK)
	data := t.TempDir()
	s := start(t, data)
	path := setupGitHub(t, s)
	org := firstOrgID(t, s)
	pausedID, _ := addConsumer(t, s, org, "paused", paused.url)
	addConsumer(t, s, org, "other", other.url)
	var c struct{ Paused bool }
	s.api(t, "PATCH", "/api/v1/consumers/"+pausedID, map[string]any{"paused": true}, &c)
	if !c.Paused {
		t.Fatal("PATCH {paused: true} answered a consumer that is not paused")
	}

	var ids []string
	send := func(n int) {
		t.Helper()
		for range n {
			ids = append(ids, "pause-"+strconv.Itoa(len(ids)))
			postWebhooks(t, s, path, ids[len(ids)-1])
		}
	}
	// held waits until the other consumer got every webhook and the paused
	// one holds as many, having been called for none.
	held := func(when string) {
		t.Helper()
		eventually(t, 30*time.Second, when+": the other consumer gets every webhook", func() bool {
			return len(other.deliveryIDs(t)) == len(ids)
		})
		eventually(t, 30*time.Second, when+": the paused consumer holds every event", func() bool {
			return s.health(t, pausedID).Held == len(ids)
		})
		if h := s.health(t, pausedID); h.State != "paused" || h.Due != 0 || h.InFlight != 0 || h.Failed1h != 0 || h.Delivered1h != 0 {
			t.Fatalf("%s: health of the paused consumer %+v", when, h)
		}
		if got := paused.received(); len(got) != 0 {
			t.Fatalf("%s: the paused consumer was called %d times", when, len(got))
		}
		for _, e := range s.events(t) {
			if e.State == "delivered" || e.State == "dead" {
				t.Fatalf("%s: event %s is %s while a consumer of it is paused", when, e.ID, e.State)
			}
		}
	}
	send(10)
	held("before the restart")

	s.kill()
	s = start(t, data)
	if h := s.health(t, pausedID); h.State != "paused" || h.Held != len(ids) {
		t.Fatalf("after the restart the paused consumer's health is %+v, want paused holding %d", h, len(ids))
	}
	send(5) // the restarted process routes: the other consumer gets these
	held("after the restart")

	s.api(t, "PATCH", "/api/v1/consumers/"+pausedID, map[string]any{"paused": false}, &c)
	if c.Paused {
		t.Fatal("PATCH {paused: false} answered a consumer still paused")
	}
	eventually(t, 60*time.Second, "the resumed consumer receives every held event", func() bool {
		return len(paused.deliveryIDs(t)) == len(ids)
	})
	eventually(t, 30*time.Second, "every event delivered", func() bool {
		for _, e := range s.events(t) {
			if e.State != "delivered" {
				return false
			}
		}
		return true
	})
	got := paused.deliveryIDs(t)
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("the resumed consumer got %s %d times, want once", id, got[id])
		}
	}
	if h := s.health(t, pausedID); h.State != "enabled" || h.Held != 0 || h.Delivered1h != len(ids) {
		t.Fatalf("health after the resume: %+v", h)
	}
}

// TestARotatedConsumerSecretSignsBesideTheOldOneUntilItsOverlapEnds: on the
// real binary, a delivery before the rotation is signed under the first
// secret alone; after `intake consumers rotate-secret --keep-old-for`,
// under the old and the new; once the overlap has passed, under the new
// alone.
func TestARotatedConsumerSecretSignsBesideTheOldOneUntilItsOverlapEnds(t *testing.T) {
	cons := newCapturingConsumer(t, http.StatusOK)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	id, oldSecret := addConsumer(t, s, firstOrgID(t, s), "billing", cons.url)
	nth := func(n int) call {
		t.Helper()
		eventually(t, 30*time.Second, "delivery "+strconv.Itoa(n), func() bool { return len(cons.received()) >= n })
		got := cons.received()
		if len(got) != n {
			t.Fatalf("the consumer got %d calls, want %d", len(got), n)
		}
		return got[n-1]
	}

	postWebhooks(t, s, path, "rotate-before")
	if ok, n := nth(1).signedBy(t, oldSecret); !ok[0] || n != 1 {
		t.Fatalf("before the rotation: %d signatures, under the first secret %v", n, ok[0])
	}

	const keep = 6 * time.Second
	var rotated struct {
		SigningSecret string    `json:"signing_secret"`
		OldValidUntil time.Time `json:"old_valid_until"`
	}
	out := s.cli(t, "consumers", "rotate-secret", id, "--keep-old-for", keep.String(), "--json")
	if err := json.Unmarshal([]byte(out), &rotated); err != nil || !strings.HasPrefix(rotated.SigningSecret, "whsec_") ||
		rotated.SigningSecret == oldSecret || rotated.OldValidUntil.IsZero() {
		t.Fatalf("rotate-secret printed %s (%v)", out, err)
	}
	newSecret := rotated.SigningSecret

	postWebhooks(t, s, path, "rotate-during")
	during := nth(2)
	if during.at.After(rotated.OldValidUntil.Add(-time.Second)) {
		t.Fatalf("the delivery during the overlap came at %v, too near its end %v to judge", during.at, rotated.OldValidUntil)
	}
	if ok, n := during.signedBy(t, oldSecret, newSecret); !ok[0] || !ok[1] || n != 2 {
		t.Fatalf("during the overlap: %d signatures, under the old %v, under the new %v; want both: %q",
			n, ok[0], ok[1], during.header.Get("webhook-signature"))
	}

	// The overlap's end is a time, not a state the server reports.
	eventually(t, keep+30*time.Second, "the old secret's overlap ends", func() bool {
		return time.Now().After(rotated.OldValidUntil.Add(time.Second))
	})
	postWebhooks(t, s, path, "rotate-after")
	if ok, n := nth(3).signedBy(t, oldSecret, newSecret); ok[0] || !ok[1] || n != 1 {
		t.Fatalf("after the overlap: %d signatures, under the old %v, under the new %v; want the new alone", n, ok[0], ok[1])
	}
}

// TestAConsumerAnswering410GoneIsDisabledAuditedAndNotifiedWhy: on the real
// binary, a consumer answering 410 Gone is called once: it is disabled,
// its delivery records the 410 and why, the audit log and the org's
// notification URL say why, and later events reach only the other
// consumer.
func TestAConsumerAnswering410GoneIsDisabledAuditedAndNotifiedWhy(t *testing.T) {
	gone, ok := newCapturingConsumer(t, http.StatusGone), newCapturingConsumer(t, http.StatusOK)
	notes := newCapturingConsumer(t, http.StatusOK)
	s := start(t, t.TempDir(), "--notify-interval", "100ms")
	path := setupGitHub(t, s)
	org := firstOrgID(t, s)
	s.api(t, "PUT", "/api/v1/orgs/"+org+"/notifications", map[string]any{"url": notes.url, "topics": []string{"consumer.disabled"}}, nil)
	goneID, _ := addConsumer(t, s, org, "old-app", gone.url)
	addConsumer(t, s, org, "billing", ok.url)

	postWebhooks(t, s, path, "gone-1")
	eventually(t, 30*time.Second, "the gone consumer is disabled", func() bool {
		return s.health(t, goneID).State == "disabled"
	})
	var c struct{ Enabled bool }
	s.api(t, "GET", "/api/v1/consumers/"+goneID, nil, &c)
	if c.Enabled {
		t.Fatal("the consumer reads enabled although its health says disabled")
	}
	var evs []event
	eventually(t, 30*time.Second, "the first event delivered by the other consumer", func() bool {
		evs = s.events(t)
		return len(evs) == 1 && evs[0].State == "delivered"
	})
	var ev struct {
		Deliveries []struct {
			ConsumerID string `json:"consumer_id"`
			StatusCode int    `json:"status_code"`
			Error      string `json:"error"`
		} `json:"deliveries"`
	}
	s.api(t, "GET", "/api/v1/events/"+evs[0].ID, nil, &ev)
	recorded := 0
	for _, d := range ev.Deliveries {
		if d.ConsumerID == goneID {
			recorded++
			if d.StatusCode != http.StatusGone || !strings.Contains(d.Error, "410") {
				t.Fatalf("the gone consumer's delivery %+v, want its 410 and why", d)
			}
		}
	}
	if recorded != 1 {
		t.Fatalf("%d deliveries to the gone consumer, want 1: %+v", recorded, ev.Deliveries)
	}

	var audit struct {
		Items []struct {
			Action, Actor, Detail string
			TargetID              string `json:"target_id"`
		}
	}
	s.api(t, "GET", "/api/v1/audit", nil, &audit)
	disabled := 0
	for _, a := range audit.Items {
		if a.Action == "consumer.disable" && a.TargetID == goneID {
			disabled++
			if a.Actor != "intake" || !strings.Contains(a.Detail, "410") {
				t.Fatalf("audit entry %+v, want intake's, saying 410", a)
			}
		}
	}
	if disabled != 1 {
		t.Fatalf("%d consumer.disable entries for the gone consumer, want 1: %+v", disabled, audit.Items)
	}

	eventually(t, 30*time.Second, "the org's URL is notified", func() bool { return len(notes.received()) > 0 })
	var note struct {
		Type, Subject, Detail string
		OrgID                 string `json:"org_id"`
	}
	if n := notes.received()[0]; json.Unmarshal(n.body, &note) != nil || note.Type != "consumer.disabled" ||
		note.Subject != goneID || note.OrgID != org || !strings.Contains(note.Detail, "410") {
		t.Fatalf("notification %s, want consumer.disabled about %s saying 410", n.body, goneID)
	}

	postWebhooks(t, s, path, "gone-2", "gone-3")
	eventually(t, 30*time.Second, "the later events delivered to the other consumer", func() bool {
		if len(ok.deliveryIDs(t)) != 3 {
			return false
		}
		for _, e := range s.events(t) {
			if e.State != "delivered" {
				return false
			}
		}
		return true
	})
	if got := gone.received(); len(got) != 1 {
		t.Fatalf("the disabled consumer was called %d times, want only the call it answered 410", len(got))
	}
}
