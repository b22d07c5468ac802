package ingress_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/cputime"
	"github.com/intakehq/intake/internal/token"
	"github.com/intakehq/intake/store/sqlite"
)

// Load shape of BenchmarkIngest (issue 2, "Measure and report").
const (
	benchClients   = 64
	benchBodyBytes = 2 << 10
)

// BenchmarkIngest drives a bare net/http handler, the ingress handler with
// its ingests discarded, and the durable ingress path with the same load,
// in one run, so their figures compare on a noisy machine: the first gap
// is what the handler costs, the second what keeping the webhook on disk
// costs. Speed is reported, never asserted; a non-2xx answer fails it.
//
//	go test -run='^$' -bench=BenchmarkIngest -benchtime=5s ./ingress/
func BenchmarkIngest(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusAccepted)
		})
		benchServe(b, bare, "/webhooks/bare")
	})
	b.Run("handler", func(b *testing.B) {
		h, path := benchIngress(b, func(s intake.Store) intake.Store { return discardIngests{s} })
		benchServe(b, h, path)
	})
	b.Run("sqlite", func(b *testing.B) {
		h, path := benchIngress(b, nil)
		benchServe(b, h, path)
	})
}

// discardIngests is a store that drops what it is given to ingest: with it
// the benchmark measures the ingress handler alone, everything but the
// durable write.
type discardIngests struct{ intake.Store }

func (discardIngests) Ingest(context.Context, *intake.Message) error { return nil }

// benchIngress returns the real ingress handler over the real SQLite store
// (WAL, synchronous=FULL) on a temporary directory, and the path of an
// enabled endpoint without a rate limit. wrap, when set, stands between
// the handler and the store.
func benchIngress(b *testing.B, wrap func(intake.Store) intake.Store) (http.Handler, string) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(b.TempDir(), "intake.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	now := time.Now().UTC()
	org := intake.Org{ID: intake.NewID(), Name: "bench", CreatedAt: now}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "none", Name: "bench", CreatedAt: now}
	tok := token.New("")
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, Provider: "none",
		TokenHash: token.Hash(tok), Enabled: true, MaxBodyBytes: intake.DefaultMaxBodyBytes, CreatedAt: now}
	if err := s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("bench-key")}); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateConnection(ctx, conn); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateEndpoint(ctx, ep); err != nil {
		b.Fatal(err)
	}
	var store intake.Store = s
	if wrap != nil {
		store = wrap(s)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", ingress.New(ingress.Config{Store: store}))
	return mux, "/webhooks/" + tok
}

// benchServe serves h on loopback and posts b.N webhooks to path from
// benchClients keep-alive clients, then reports requests/s and p99.
func benchServe(b *testing.B, h http.Handler, path string) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: benchClients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	body := bytes.Repeat([]byte("x"), benchBodyBytes-len(`{"pad":""}`))
	body = append(append([]byte(`{"pad":"`), body...), `"}`...)
	url := srv.URL + path

	var (
		next      atomic.Int64
		failed    atomic.Bool
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
		firstErr  error
		wg        sync.WaitGroup
	)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	start, cpu0 := time.Now(), cputime.Process()
	for range benchClients {
		wg.Go(func() {
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) && !failed.Load() {
				t0 := time.Now()
				err := benchPost(client, url, body)
				mine = append(mine, time.Since(t0))
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					failed.Store(true)
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cputime.Process()-cpu0
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(benchPercentile(latencies, 99))/float64(time.Millisecond), "p99-ms")
	// CPU of the whole process (server and clients) per request: what the
	// two cores of a small machine must pay for each webhook.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
}

func benchPost(client *http.Client, url string, body []byte) error {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s: status %d", url, resp.StatusCode)
	}
	return nil
}

// benchPercentile is the p-th percentile of sorted values by the nearest-rank
// method: the smallest value at or above p% of them.
func benchPercentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}
