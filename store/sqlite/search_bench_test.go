package sqlite

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/cputime"
)

// BenchmarkIndexSearch measures what the search indexer costs: b.N
// messages with 2 KiB JSON bodies, each settled into one event of 1 KiB of
// data, are stored first; then the indexer indexes every body and event.
// It reports the CPU time of the process per message (its body and its
// event) and per KiB indexed.
//
//	go test -run='^$' -bench=BenchmarkIndexSearch -benchtime=20000x ./store/sqlite/
func BenchmarkIndexSearch(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "intake.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var kib float64
	for i := range b.N {
		data := fmt.Sprintf(`{"id":"evt_%d","customer":{"id":"cus_%d","email":"user%d@example.com"},"amount":%d,"note":%q}`,
			i, i%5000, i%5000, i*37%100000, filler[:700+i%200])
		body := fmt.Sprintf(`{"data":%s,"pad":%q}`, data, filler[:900])
		kib += float64(len(body)+len(data)) / 1024
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			now := time.Now().UTC()
			m := &intake.Message{ID: intake.NewID(), OrgID: "o", ConnectionID: "c", EndpointID: "e", Method: "POST",
				Header: http.Header{}, Body: []byte(body), Digest: "d", ReceivedAt: now, State: intake.MessageQueued,
				MaxAttempts: 6, NextAttemptAt: now}
			if err := s.Ingest(ctx, m); err != nil {
				b.Error(err)
				return
			}
			e := intake.Event{ID: intake.NewID(), OrgID: "o", ConnectionID: "c", MessageID: m.ID, Provider: "stripe", Type: "t",
				Kind: intake.KindEvent, ProviderEventID: "evt_" + m.ID, OccurredAt: now, ReceivedAt: now, Data: []byte(data),
				State: intake.EventDelivered, CreatedAt: now}
			if err := s.tx(ctx, func(tx *wtx) error { return insertEventsForBench(ctx, tx, e) }); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	cpu := cputime.Process()
	b.ResetTimer()
	for {
		n, err := s.IndexSearch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	b.StopTimer()
	used := float64((cputime.Process() - cpu).Microseconds())
	b.ReportMetric(used/float64(b.N), "cpu-µs/message")
	b.ReportMetric(used/kib, "cpu-µs/KiB")
}

// insertEventsForBench writes an event row as a settle does, for the
// indexer to find.
func insertEventsForBench(ctx context.Context, tx *wtx, e intake.Event) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id,
		occurred_at, received_at, data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '[]', ?, 1, 6, 0, ?)`, e.ID, e.OrgID, e.ConnectionID, e.MessageID, e.Provider, e.Type,
		e.Kind, e.ProviderEventID, ts(e.OccurredAt), ts(e.ReceivedAt), string(e.Data), e.State, ts(e.CreatedAt))
	return err
}
