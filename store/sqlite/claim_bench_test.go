package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkClaimMessages shows that claiming stays as fast with a million
// stored messages as with ten thousand: claims read their partial index,
// not the table.
//
//	go test -run='^$' -bench=BenchmarkClaimMessages -benchtime=2000x ./store/sqlite/
func BenchmarkClaimMessages(b *testing.B) {
	for _, stored := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "intake.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			// Settled history, and 10 000 queued messages to claim from.
			_, err = s.write.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state,
					attempt, max_attempts, next_attempt_at)
				SELECT printf('m-%09d', i), 'o', 'c', 'e', 'POST', '', '', ?, CASE WHEN i <= 10000 THEN 'queued' ELSE 'processed' END,
					0, 6, ? FROM n`, stored, ts(now), ts(now))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				claims, err := s.ClaimMessages(ctx, now, time.Minute, 64)
				if err != nil || len(claims) == 0 {
					b.Fatalf("claimed %d: %v", len(claims), err)
				}
				b.StopTimer()
				if _, err := s.write.ExecContext(ctx, `UPDATE messages SET state = 'queued', lease_until = NULL WHERE state = 'processing'`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
