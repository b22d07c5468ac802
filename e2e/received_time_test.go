package e2e

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // to plant a fault in the embedded store's database

	"github.com/intakehq/intake/provider/fixtures"
)

// failFirstSettles makes the server's store refuse to settle an original
// message processed on its first attempt, as a database that times out
// once would: that attempt fails transiently and the message is retried.
// A trigger does it, in the same database the server writes.
func failFirstSettles(t *testing.T, data string) {
	t.Helper()
	ctx := context.Background()
	if onPostgres() {
		c, err := pgx.Connect(ctx, databaseFor(t, data))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `CREATE FUNCTION e2e_fail_first_settle() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'e2e: the first settle fails'; END $$`); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `CREATE TRIGGER e2e_fail_first_settle BEFORE UPDATE ON messages FOR EACH ROW
			WHEN (NEW.state = 'processed' AND NEW.attempt = 1 AND NEW.replay_of IS NULL)
			EXECUTE FUNCTION e2e_fail_first_settle()`); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "intake.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TRIGGER e2e_fail_first_settle BEFORE UPDATE OF state ON messages
		WHEN NEW.state = 'processed' AND NEW.attempt = 1 AND NEW.replay_of = ''
		BEGIN SELECT RAISE(ABORT, 'e2e: the first settle fails'); END`); err != nil {
		t.Fatal(err)
	}
}

type retriedMessage struct {
	message
	Attempt    int       `json:"attempt"`
	ReceivedAt time.Time `json:"received_at"`
	ReplayOf   string    `json:"replay_of"`
	EventIDs   []string  `json:"event_ids"`
	Attempts   []struct {
		Attempt int       `json:"attempt"`
		State   string    `json:"state"`
		At      time.Time `json:"at"`
	} `json:"attempts"`
}

// waitSettled waits until message id settles and returns it.
func (s *server) waitSettled(t *testing.T, id string) retriedMessage {
	t.Helper()
	var m retriedMessage
	eventually(t, 60*time.Second, "message "+id+" settled", func() bool {
		s.api(t, "GET", "/api/v1/messages/"+id, nil, &m)
		return settled(m.State)
	})
	return m
}

// TestRetriedAndReplayedSignaturesVerifyAgainstTheirReceiptTime posts a
// signed Stripe and a signed Slack message to connections whose timestamp
// tolerance is 2 s, makes each one's first attempt fail transiently, and
// has the retry run seconds past that tolerance (--retry-base 4s), as the
// five-minute tolerance would be passed by a retry hours later. Each ends
// processed, not ignored for its signature; so does a replay of each made
// after the tolerance has passed, as one a day later would.
func TestRetriedAndReplayedSignaturesVerifyAgainstTheirReceiptTime(t *testing.T) {
	const tolerance = 2 * time.Second
	data := t.TempDir()
	s := start(t, data, "--retry-base", "4s")
	failFirstSettles(t, data)
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)

	ids := map[string]string{} // provider → message id
	known := map[string]bool{}
	for _, p := range []struct{ provider, secret string }{
		{"stripe", "whsec_e2e_retry_secret"},
		{"slack", "8f742231b10e8888abcd99yyyzzz85a5"},
	} {
		var conn struct{ ID string }
		s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": p.provider, "name": p.provider,
			"secrets": []string{p.secret}, "config": map[string]any{"tolerance": tolerance.String()}}, &conn)
		var ep struct{ Token string }
		s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &ep)
		url := s.url + "/webhooks/" + ep.Token
		sample, err := fixtures.Build(p.provider, fixtures.Options{Secret: p.secret, URL: url})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := sample.Request(url)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: ingress answered %d", p.provider, resp.StatusCode)
		}
		for _, m := range s.messages(t) {
			if !known[m.ID] {
				ids[p.provider], known[m.ID] = m.ID, true
			}
		}
	}

	for provider, id := range ids {
		m := s.waitSettled(t, id)
		if m.State != "processed" || m.Outcome != "events" || len(m.EventIDs) != 1 {
			t.Fatalf("%s: retried message ended %s/%s with %d events; want processed with its event", provider, m.State, m.Outcome, len(m.EventIDs))
		}
		if m.Attempt != 2 || len(m.Attempts) != 2 || m.Attempts[0].State != "failed" {
			t.Fatalf("%s: attempts %+v; want a failed first attempt and a second that processed it", provider, m.Attempts)
		}
		if late := m.Attempts[1].At.Sub(m.ReceivedAt); late <= tolerance {
			t.Fatalf("%s: the retry ran %v after receipt, within the %v tolerance: this proves nothing", provider, late, tolerance)
		}

		var replay struct{ ID string }
		s.api(t, "POST", "/api/v1/messages/"+id+"/replay", nil, &replay)
		r := s.waitSettled(t, replay.ID)
		if r.State != "processed" || r.Outcome != "events" || r.ReplayOf != id {
			t.Fatalf("%s: replay ended %s/%s; want processed", provider, r.State, r.Outcome)
		}
	}
}
