package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/provider/fixtures"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

// failFirstSettle refuses the first settlement that would create events,
// as a store that times out once would; later ones commit.
type failFirstSettle struct {
	*sqlite.Store
	failed atomic.Bool
}

func (f *failFirstSettle) SettleMessage(ctx context.Context, now time.Time, s intake.Settlement) (intake.Settled, error) {
	if len(s.Events) > 0 && f.failed.CompareAndSwap(false, true) {
		return intake.Settled{}, fmt.Errorf("store timed out")
	}
	return f.Store.SettleMessage(ctx, now, s)
}

// signedAt ingests a sample of providerName signed at signed with secret
// and received at received, on a new connection (default tolerance).
func (e *env) signedAt(t *testing.T, providerName, secret string, signed, received time.Time) string {
	t.Helper()
	ctx := context.Background()
	conn := intake.Connection{ID: intake.NewID(), OrgID: e.ep.OrgID, Provider: providerName, Name: providerName + "-" + intake.NewID(),
		CreatedAt: e.clock.Now()}
	conn.SealedSecrets, _ = e.sealer.SealSecrets([]string{secret}, []byte(conn.ID))
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: conn.ID, TokenHash: []byte(conn.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	if err := e.store.CreateConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	sample, err := fixtures.Build(providerName, fixtures.Options{Secret: secret, Now: signed})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(sample.Body)
	m := &intake.Message{ID: intake.NewID(), OrgID: ep.OrgID, ConnectionID: conn.ID, EndpointID: ep.ID,
		Method: sample.Method, Header: sample.Header, Body: sample.Body, Digest: hex.EncodeToString(sum[:]),
		ReceivedAt: received, State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: received}
	if err := e.store.Ingest(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// timestamped are providers whose signature covers a timestamp with a
// five-minute tolerance.
var timestamped = []struct{ provider, secret string }{
	{"stripe", "whsec_worker_test_secret"},
	{"slack", "8f742231b10e8888abcd99yyyzzz85a5"},
}

// TestSignatureTimestampIsJudgedAgainstReceiptNotTheRetryOrReplayTime
// fails a correctly signed message's first attempt transiently, retries it
// an hour later and replays it a day later: each verifies against the time
// the message arrived, so each ends processed with its events, never
// ignored for its signature.
func TestSignatureTimestampIsJudgedAgainstReceiptNotTheRetryOrReplayTime(t *testing.T) {
	for _, p := range timestamped {
		t.Run(p.provider, func(t *testing.T) {
			e := setup(t)
			ctx := context.Background()
			store := &failFirstSettle{Store: e.store}
			w := worker.New(worker.Config{Store: store, Sealer: e.sealer, Clock: e.clock, Backoff: intake.Backoff{Base: 10 * time.Second}})
			id := e.signedAt(t, p.provider, p.secret, e.clock.Now(), e.clock.Now())
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if m := e.message(t, id); m.State != intake.MessageFailed || m.ErrorCode != intake.ErrCodeTransient {
				t.Fatalf("first attempt: %s/%s %s, want failed (transient)", m.State, m.Outcome, m.ErrorMessage)
			}

			e.clock.Advance(time.Hour) // far past the five-minute tolerance
			if n, err := w.RunOnce(ctx); err != nil || n != 1 {
				t.Fatalf("retry claimed %d (%v)", n, err)
			}
			m := e.message(t, id)
			if m.State != intake.MessageProcessed || m.Outcome != intake.OutcomeEvents || m.Attempt != 2 || len(m.EventIDs) != 1 {
				t.Fatalf("retry an hour later: %s/%s attempt %d, %d events (%s); want processed with its event",
					m.State, m.Outcome, m.Attempt, len(m.EventIDs), m.ErrorMessage)
			}

			e.clock.Advance(24 * time.Hour)
			ctl := control.New(control.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock})
			replay, err := ctl.ReplayMessage(ctx, control.Caller{Actor: "staff"}, id)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := w.RunOnce(ctx); err != nil || n != 1 {
				t.Fatalf("replay claimed %d (%v)", n, err)
			}
			r := e.message(t, replay.ID)
			if r.State != intake.MessageProcessed || r.Outcome != intake.OutcomeEvents || len(r.EventIDs) != 1 || r.ReplayOf != id {
				t.Fatalf("replay a day later: %s/%s, %d events (%s); want processed with its event",
					r.State, r.Outcome, len(r.EventIDs), r.ErrorMessage)
			}
		})
	}
}

// TestSignatureTimestampOutsideToleranceOfReceiptIsIgnored is the premise
// of the test above: these adapters do refuse a signature made more than
// five minutes before the message arrived, so a verifier that judged by
// the retry's clock would fail it.
func TestSignatureTimestampOutsideToleranceOfReceiptIsIgnored(t *testing.T) {
	for _, p := range timestamped {
		t.Run(p.provider, func(t *testing.T) {
			e := setup(t)
			id := e.signedAt(t, p.provider, p.secret, e.clock.Now().Add(-6*time.Minute), e.clock.Now())
			e.run(t)
			if m := e.message(t, id); m.State != intake.MessageIgnored || m.Outcome != intake.OutcomeSignature {
				t.Fatalf("signed six minutes before receipt: %s/%s, want ignored (signature)", m.State, m.Outcome)
			}
		})
	}
}
