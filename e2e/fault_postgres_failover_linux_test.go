package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// failoverRun is what became of the webhooks posted around one failover.
type failoverRun struct {
	acked, present, delivered, lost, absent, twice, redelivered int
	// appliedTwice counts the acknowledged webhooks the consumer, an
	// application on package inbox, applied more than once.
	appliedTwice int
	// answers counts the answers between the kill and the first 2xx
	// after it, by status; unanswered the posts that got none.
	answers    map[int]int
	unanswered int
	// ackAgain is the time from the primary's end, and from the promotion's
	// start, to the first 2xx of a webhook posted after the primary ended.
	ackAgain, afterPromote time.Duration
	// lateAcks are the webhooks missing after the failover (never
	// delivered, or not in the store), by how long before the primary's
	// end they were acknowledged.
	lateAcks []time.Duration
	// settled is the time from the primary's end until every message
	// was settled and every event delivered.
	settled time.Duration
	// unsettled counts the acknowledged webhooks neither interpreted nor
	// delivered once every event then in the store was delivered.
	unsettled int
}

// TestPostgresFailoverToAStreamingStandby: intake serves on a primary with
// a streaming standby (pg_basebackup -R on loopback) through a multi-host
// URL (target_session_attrs=read-write), webhooks are posted while the
// primary is stopped at once (pg_ctl stop -m immediate) and the standby is
// promoted. With a synchronous standby (synchronous_standby_names, and the
// synchronous_commit=on intake's sessions set) every acknowledged webhook
// survives and reaches the consumer once. With an asynchronous one the last
// commits the primary acknowledged may not have reached the standby: they
// are counted, and each must be one acknowledged in the moments before the
// kill; nothing reaches the consumer as two events either way. The count
// waits until every message is settled: one whose worker's settle the
// primary's end cut off is processing under its lease until another claim
// takes it, neither interpreted nor delivered yet, and not lost.
func TestPostgresFailoverToAStreamingStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two PostgreSQL clusters and fails one over")
	}
	if onPostgres() {
		t.Skip("runs once, in the default pass: it runs PostgreSQL clusters of its own in either")
	}
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "synchronous", false: "asynchronous"}[sync]
		t.Run(name, func(t *testing.T) {
			r := runFailover(t, sync)
			t.Logf("\n| standby | acknowledged | present after | delivered | lost | not in the store | twice | applied twice | redelivered | 503 | unanswered | ack again (kill) | ack again (promote) | unsettled then | all settled |\n"+
				"| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %d | %s |", name,
				r.acked, r.present, r.delivered, r.lost, r.absent, r.twice, r.appliedTwice, r.redelivered, r.answers[http.StatusServiceUnavailable], r.unanswered,
				r.ackAgain.Round(10*time.Millisecond), r.afterPromote.Round(10*time.Millisecond), r.unsettled, r.settled.Round(10*time.Millisecond))
			t.Logf("missing ones acknowledged this long before the kill: %v", r.lateAcks)
			for status, n := range r.answers {
				if status/100 != 2 && status != http.StatusServiceUnavailable {
					t.Errorf("during the failover ingress answered %d %d times: a webhook not made durable is answered 503", status, n)
				}
			}
			if r.twice > 0 || r.appliedTwice > 0 {
				t.Errorf("%d webhooks reached the consumer as more than one event, %d were applied twice by it", r.twice, r.appliedTwice)
			}
			if sync {
				if r.lost > 0 || r.absent > 0 {
					t.Errorf("with a synchronous standby %d acknowledged webhooks never reached the consumer and %d are not in the store", r.lost, r.absent)
				}
				return
			}
			for _, d := range r.lateAcks {
				if d > asyncLag {
					t.Errorf("a webhook acknowledged %v before the kill is missing: more than an asynchronous standby's lag on loopback (%v)", d, asyncLag)
				}
			}
		})
	}
}

// asyncLag bounds how far an asynchronous standby on loopback trails its
// primary: a webhook acknowledged longer before the kill than this must
// have reached the standby.
const asyncLag = time.Second

// runFailover runs intake on a primary and a standby (synchronous or not),
// posts webhooks from four clients, kills the primary, promotes the
// standby, and counts.
func runFailover(t *testing.T, synchronous bool) failoverRun {
	dir := t.TempDir()
	var primarySettings []string
	if synchronous {
		primarySettings = []string{"synchronous_standby_names=standby", "synchronous_commit=on"}
	}
	primary := startOwnCluster(t, dir, primarySettings...)
	standby := newOwnCluster(t, dir, "standby")
	standby.run(t, "pg_basebackup", "-h", "127.0.0.1", "-p", fmt.Sprint(primary.port), "-U", "postgres",
		"-D", standby.data, "-R", "-X", "stream", "-c", "fast")
	// cluster_name is the application_name the standby's walreceiver
	// gives the primary, which synchronous_standby_names names.
	standby.start(t, "cluster_name=standby")
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range []*ownCluster{primary, standby} {
				log, _ := os.ReadFile(c.data + ".log")
				t.Logf("%s's log:\n%s", c.data, log)
			}
		}
	})
	waitStreaming(t, primary, synchronous)

	db := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		primary.port, standby.port)
	app, consumer := appConsumer(t, deliveryOf)
	sink := app.Sink
	s := start(t, t.TempDir(), "--db", db, "--store-wait", "1s")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("intake's log:\n%s", s.logs)
		}
	})
	path := setupGitHub(t, s)
	id, secret := addConsumer(t, s, firstOrgID(t, s), "sink", consumer.URL)
	if err := app.Trust(secret); err != nil {
		t.Fatal(err)
	}
	s.api(t, "PATCH", "/api/v1/consumers/"+id, map[string]any{"breaker_failures": 1000, "retry": map[string]any{"base": "1s"}}, nil)

	type post struct {
		id         string
		status     int
		sent, done time.Time
	}
	var (
		mu    sync.Mutex
		posts []post
		seq   int
	)
	client := &http.Client{Timeout: 2 * time.Second}
	send := func(id string) post {
		p := post{id: id, sent: time.Now()}
		if resp, err := client.Do(githubDelivery(s.url+path, id)); err == nil {
			resp.Body.Close()
			p.status = resp.StatusCode
		}
		p.done = time.Now()
		mu.Lock()
		posts = append(posts, p)
		mu.Unlock()
		return p
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				seq++
				id := fmt.Sprintf("failover-%d", seq)
				mu.Unlock()
				send(id)
			}
		})
	}
	time.Sleep(1500 * time.Millisecond) // webhooks under way as the primary dies
	if out, err := primary.pgctl("stop", "-m", "immediate"); err != nil {
		t.Fatalf("stop the primary: %v\n%s", err, out)
	}
	killed := time.Now() // the primary is gone: it stopped within pg_ctl's run
	// A moment with no primary at all, as a failover manager's detection
	// takes.
	time.Sleep(500 * time.Millisecond)
	promoted := time.Now() // pg_ctl promote returns once it has
	if out, err := standby.pgctl("promote"); err != nil {
		t.Fatalf("promote the standby: %v\n%s", err, out)
	}
	var r failoverRun
	eventually(t, faultWait, "a webhook acknowledged after the failover", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range posts {
			if p.sent.After(killed) && p.status/100 == 2 {
				r.ackAgain, r.afterPromote = p.done.Sub(killed), p.done.Sub(promoted)
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second) // and served for a while after
	close(stop)
	wg.Wait()

	// A provider retries what it was not answered 2xx.
	r.answers = map[int]int{}
	acked := map[string]time.Time{}
	for _, p := range posts {
		if p.status/100 == 2 {
			acked[p.id] = p.done
		}
		if p.done.After(killed) && p.sent.Before(killed.Add(r.ackAgain)) {
			if p.status == 0 {
				r.unanswered++
			} else {
				r.answers[p.status]++
			}
		}
	}
	var retry []string
	for _, p := range posts {
		if _, ok := acked[p.id]; !ok && !slices.Contains(retry, p.id) {
			retry = append(retry, p.id)
		}
	}
	for _, id := range retry {
		eventually(t, faultWait, "webhook "+id+" acknowledged on a retry", func() bool {
			p := send(id)
			if p.status/100 == 2 {
				acked[id] = p.done
				return true
			}
			return false
		})
	}

	// Every message the store holds is settled (a message's provider
	// event id is known once it is interpreted) and every event delivered;
	// then the consumer's calls and the store are read.
	// A message whose worker's settle the failover cut off is still
	// processing here, under the lease the dead primary recorded: it is
	// neither interpreted nor delivered until another claim takes it. Once
	// every event so far is delivered, such webhooks are counted (a count
	// taken then, as this test once did, finds them missing).
	eventually(t, faultWait, "every event delivered", func() bool { return s.allDelivered(t) })
	live, interpreted := map[string]int{}, map[string]bool{}
	for _, m := range s.messages(t) {
		if slices.Contains(intake.LiveMessageStates, intake.MessageState(m.State)) {
			live[m.State]++
		}
		interpreted[m.ProviderEventID] = true
	}
	for id := range acked {
		if n, _ := sink.Counts(id); n == 0 && !interpreted[id] {
			r.unsettled++
		}
	}
	t.Logf("once every event so far was delivered, messages not yet settled: %v", live)
	eventually(t, faultWait, "every message settled and every event delivered", func() bool {
		for _, m := range s.messages(t) {
			if slices.Contains(intake.LiveMessageStates, intake.MessageState(m.State)) {
				return false
			}
		}
		return s.allDelivered(t)
	})
	r.settled = time.Since(killed)
	stored := map[string]bool{}
	for _, m := range s.messages(t) {
		stored[m.ProviderEventID] = true
	}
	applied, err := app.Applied(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for id, at := range acked {
		r.acked++
		ids, redeliveries := sink.Counts(id)
		missing := false
		if stored[id] {
			r.present++
		} else {
			r.absent++
			missing = true
		}
		if ids == 0 {
			r.lost++
			missing = true
		} else {
			r.delivered++
		}
		if ids > 1 {
			r.twice++
		}
		if applied[id] > 1 {
			r.appliedTwice++
		}
		r.redelivered += redeliveries
		if missing {
			r.lateAcks = append(r.lateAcks, killed.Sub(at).Round(time.Millisecond))
		}
	}
	slices.Sort(r.lateAcks)
	s.kill()
	checkOutageLogged(t, s)
	return r
}

// waitStreaming waits until the primary streams to the standby, as its
// synchronous standby when synchronous.
func waitStreaming(t *testing.T, primary *ownCluster, synchronous bool) {
	t.Helper()
	want := "async"
	if synchronous {
		want = "sync"
	}
	eventually(t, 30*time.Second, "the standby streaming ("+want+")", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, primary.url)
		if err != nil {
			return false
		}
		defer conn.Close(ctx)
		var n int
		err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = $1`, want).Scan(&n)
		return err == nil && n == 1
	})
}
