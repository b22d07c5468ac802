package sqlite

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/cputime"
	"github.com/intakehq/intake/store/storetest"
)

// BenchmarkIngest measures the store's durable ingest alone, without HTTP:
// 64 goroutines commit 2 KiB messages through the group-committing writer.
// Its ns/op is what one stored message costs the writer.
//
//	go test -run='^$' -bench=BenchmarkIngest -benchtime=5s ./store/sqlite/
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "intake.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := bytes.Repeat([]byte("x"), 2<<10)
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"bench/1"}}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	cpu0 := cputime.Process()
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				now := time.Now().UTC()
				m := &intake.Message{ID: intake.NewID(), OrgID: "o", ConnectionID: "c", EndpointID: "e", Method: "POST",
					Header: header, Body: body, Digest: "d", ReceivedAt: now, State: intake.MessageQueued,
					MaxAttempts: 6, NextAttemptAt: now}
				if err := s.Ingest(ctx, m); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	if fi, err := os.Stat(path + "-wal"); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "wal-MiB")
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPipeline reports the statements one webhook costs the writer
// through the whole pipeline (storetest.BenchmarkPipeline); an embedded
// store has no round trips, so they are its statements too.
func BenchmarkPipeline(b *testing.B) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(b.TempDir(), "intake.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchmarkPipeline(b, s, func() (int64, int64) { n := s.statements.Load(); return n, n })
}

// BenchmarkPipelineParallel is BenchmarkPipeline from 64 goroutines at
// once, as a loaded server runs it (storetest.BenchmarkPipelineParallel).
func BenchmarkPipelineParallel(b *testing.B) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(b.TempDir(), "intake.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchmarkPipelineParallel(b, s, func() (int64, int64) { n := s.statements.Load(); return n, n })
}
