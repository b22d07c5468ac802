package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/intakehq/intake/delivery"
)

// redisStreams are the streams of the test's own on the Redis the tests
// use: every key under prefix, deleted when it ends, written by a Redis
// user of the test's own that may only add to them.
type redisStreams struct {
	addr, prefix   string
	user, password string
	client         *redis.Client
}

// newRedisStreams makes the test's key prefix and user. Without Redis the
// test fails in CI and is skipped elsewhere.
func newRedisStreams(t *testing.T) redisStreams {
	t.Helper()
	addr := os.Getenv("INTAKE_TEST_REDIS")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 2 * time.Second, MaxRetries: -1})
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is not reachable at %s (%v): CI must run it", addr, err)
		}
		t.Skipf("Redis is not reachable at %s: %v", addr, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	suffix := hex.EncodeToString(b)
	rs := redisStreams{addr: addr, prefix: "intake-e2e-" + suffix, user: "intake-e2e-" + suffix, password: "pw-" + rand.Text(),
		client: client}
	// The user may add entries to the test's streams and nothing else: a
	// password in the consumer's url is what lets intake in.
	if err := client.Do(ctx, "ACL", "SETUSER", rs.user, "on", ">"+rs.password, "resetkeys", "~"+rs.prefix+"*",
		"-@all", "+xadd", "+select", "+ping").Err(); err != nil {
		t.Fatalf("make the Redis user %s: %v", rs.user, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := client.Do(ctx, "ACL", "DELUSER", rs.user).Err(); err != nil {
			t.Errorf("delete the Redis user %s: %v", rs.user, err)
		}
		keys, err := client.Keys(ctx, rs.prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = client.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("delete the streams %s*: %v", rs.prefix, err)
		}
		client.Close()
	})
	return rs
}

// url is a consumer url that adds to the stream key (which may hold
// {type}) at addr as the test's user.
func (rs redisStreams) url(addr, key string) string {
	u := url.URL{Scheme: "redis", User: url.UserPassword(rs.user, rs.password), Host: addr, Path: "/0",
		RawQuery: "stream=" + key}
	return u.String()
}

// redisEntry is one entry read back from a stream.
type redisEntry struct {
	stream string
	fields map[string]string
}

func (e redisEntry) body() []byte { return []byte(e.fields["body"]) }

// entries reads every entry of every stream under the prefix.
func (rs redisStreams) entries(t *testing.T) []redisEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := rs.client.Keys(ctx, rs.prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []redisEntry
	for _, key := range keys {
		msgs, err := rs.client.XRange(ctx, key, "-", "+").Result()
		if err != nil {
			t.Fatalf("read stream %s: %v", key, err)
		}
		for _, m := range msgs {
			fields := map[string]string{}
			for k, v := range m.Values {
				fields[k], _ = v.(string)
			}
			out = append(out, redisEntry{stream: key, fields: fields})
		}
	}
	return out
}

// TestARedisConsumerReceivesSignedEventsAndHoldsThemWhilePaused: on the
// real binary, a consumer whose url is a Redis stream, with a password,
// gets each event as an entry of the stream of its type, the envelope as
// its body field, signed as over HTTP, webhook-id the event id; the url
// reads back with the password as ***; its test delivery is handled;
// paused, its events wait and nothing is added; resumed, every one
// arrives once.
func TestARedisConsumerReceivesSignedEventsAndHoldsThemWhilePaused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	rs := newRedisStreams(t)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	dest := rs.url(rs.addr, rs.prefix+".{type}")
	id, secret := addBrokerConsumer(t, s, dest, nil)

	var cons struct{ URL string }
	s.api(t, "GET", "/api/v1/consumers/"+id, nil, &cons)
	if want := strings.Replace(dest, rs.user+":"+rs.password+"@", "***:***@", 1); cons.URL != want {
		t.Errorf("the consumer's url reads back as %q, want %q: as written, its user and password as ***", cons.URL, want)
	}

	const n = 5
	postGitHubN(t, s, path, "redis-", n)
	eventually(t, 30*time.Second, "every event added", func() bool { return len(rs.entries(t)) == n })
	seen := map[string]bool{}
	for _, e := range rs.entries(t) {
		if e.stream != rs.prefix+".github.issues.opened" {
			t.Errorf("added to %q, want the stream of the event's type", e.stream)
		}
		var env struct{ ID, Type string }
		if err := json.Unmarshal(e.body(), &env); err != nil || env.Type != "github.issues.opened" {
			t.Fatalf("body %q is not the event's envelope: %v", e.body(), err)
		}
		if e.fields["webhook-id"] != env.ID {
			t.Errorf("webhook-id %q, want the event id %q", e.fields["webhook-id"], env.ID)
		}
		unix, _ := strconv.ParseInt(e.fields["webhook-timestamp"], 10, 64)
		if want, _ := delivery.Sign(secret, env.ID, unix, e.body()); e.fields["webhook-signature"] != want {
			t.Errorf("webhook-signature %q does not verify (want %q)", e.fields["webhook-signature"], want)
		}
		if e.fields["content-type"] != "application/json" {
			t.Errorf("fields %v lack content-type", e.fields)
		}
		seen[env.ID] = true
	}
	for _, e := range s.events(t) {
		if !seen[e.ID] {
			t.Errorf("event %s was not added", e.ID)
		}
	}

	var tested struct {
		EventID string `json:"event_id"`
		Outcome string `json:"outcome"`
		Error   string `json:"error"`
	}
	if out := s.cli(t, "consumers", "test", id, "--json"); json.Unmarshal([]byte(out), &tested) != nil || tested.Outcome != "handled" {
		t.Fatalf("consumers test answered:\n%s", out)
	}
	var testEntries []redisEntry
	for _, e := range rs.entries(t) {
		if e.stream == rs.prefix+".intake.test" {
			testEntries = append(testEntries, e)
		}
	}
	if len(testEntries) != 1 || testEntries[0].fields["webhook-id"] != tested.EventID {
		t.Fatalf("the test event %s was added as %v, want one entry on the stream of intake.test", tested.EventID, testEntries)
	}
	unix, _ := strconv.ParseInt(testEntries[0].fields["webhook-timestamp"], 10, 64)
	if want, _ := delivery.Sign(secret, tested.EventID, unix, testEntries[0].body()); testEntries[0].fields["webhook-signature"] != want {
		t.Errorf("the test event's signature %q does not verify", testEntries[0].fields["webhook-signature"])
	}
	before := n + 1

	if out := s.cli(t, "consumers", "pause", id, "--json"); !json.Valid([]byte(out)) {
		t.Fatalf("consumers pause answered:\n%s", out)
	}
	postGitHubN(t, s, path, "redis-paused-", n)
	eventually(t, 30*time.Second, "the paused consumer's deliveries are held", func() bool { return s.health(t, id).Held == n })
	if got := len(rs.entries(t)); got != before {
		t.Fatalf("%d entries added while paused, want none", got-before)
	}
	s.cli(t, "consumers", "resume", id)
	eventually(t, 30*time.Second, "every held event added on resume", func() bool { return len(rs.entries(t)) == before+n })
	ids := map[string]int{}
	for _, e := range rs.entries(t) {
		ids[e.fields["webhook-id"]]++
	}
	for _, e := range s.events(t) {
		if ids[e.ID] != 1 {
			t.Errorf("event %s added %d times, want once", e.ID, ids[e.ID])
		}
	}
}

// TestARedisConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack:
// on the real binary, a consumer whose Redis refuses connections fails its
// calls and trips its breaker; nothing dies; once Redis is reachable the
// breaker's probe succeeds and every event is added, once each.
func TestARedisConsumerWhoseBrokerIsDownTripsItsBreakerAndGetsEveryEventOnceBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	rs := newRedisStreams(t)
	relay := downRelay(t, rs.addr)

	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	id, _ := addBrokerConsumer(t, s, rs.url(relay.addr, rs.prefix+".{type}"), map[string]any{"breaker_failures": 3})

	const n = 8
	postGitHubN(t, s, path, "redis-down-", n)
	lastError := waitTripped(t, s, id, 30*time.Second)
	if strings.Contains(lastError, rs.password) {
		t.Errorf("the last error %q shows the password", lastError)
	}
	wantNothingDeliveredYet(t, s)
	if len(rs.entries(t)) != 0 {
		t.Fatal("an entry was added while the broker was down")
	}

	relay.up(t)
	waitEveryEventDelivered(t, s, 90*time.Second)
	entries := rs.entries(t)
	ids := map[string]int{}
	for _, e := range entries {
		ids[e.fields["webhook-id"]]++
	}
	wantEachEventOnce(t, s, ids, n)
	t.Logf("last error while the broker was down: %s", lastError)
}

// TestARedisURLIntakeRefusesIsA400AndSavesNothing: on the real binary,
// saving a consumer whose redis url cannot work is refused 400 with a
// message naming what is wrong, never showing the password, and no
// consumer is saved.
func TestARedisURLIntakeRefusesIsA400AndSavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	s := start(t, t.TempDir())
	setupGitHub(t, s)
	org := firstOrgID(t, s)
	count := func() int {
		var page struct{ Items []struct{ ID string } }
		s.api(t, "GET", "/api/v1/consumers", nil, &page)
		return len(page.Items)
	}
	before := count()
	for bad, says := range map[string]string{
		"redis://127.0.0.1:6379/0":                            "names no stream",
		"redis://127.0.0.1:6379/0?stream=":                    "names no stream",
		"redis://127.0.0.1:6379/16?stream=s":                  "database",
		"redis://127.0.0.1:6379/x?stream=s":                   "database",
		"redis://127.0.0.1:70000/0?stream=s":                  "port",
		"redis:///0?stream=s":                                 "absolute URL",
		"redis://127.0.0.1:6379/0?stream=s&maxlen=0":          "maxlen",
		"redis://127.0.0.1:6379/0?stream=s&maxlen=":           "maxlen",
		"redis://127.0.0.1:6379/0?stream=s&stream=t":          "2 times",
		"redis://127.0.0.1:6379/0?stream=s&group=g":           "unknown parameter",
		"redis://u:hunter2secret@127.0.0.1:6379/0?topic=s":    "unknown parameter",
		"redis://127.0.0.1:6379/0?stream=s#frag":              "fragment",
		"rediss://u:hunter2secret@127.0.0.1:6379/0?maxlen=-1": "names no stream",
	} {
		status, body := s.try(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org, "name": "bus", "app": "bus",
			"url": bad, "event_types": []string{"github.*"}})
		if status != http.StatusBadRequest || !strings.Contains(body, says) {
			t.Errorf("saving %s: %d %s, want 400 saying %q", bad, status, body, says)
		}
		if strings.Contains(body, "hunter2secret") {
			t.Errorf("saving %s: the answer %s shows the password", bad, body)
		}
	}
	if got := count(); got != before {
		t.Errorf("%d consumers saved from refused urls", got-before)
	}
}
