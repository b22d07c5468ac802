package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// fileState is a database file's size and a digest of its content.
type fileState struct {
	size   int64
	digest [sha256.Size]byte
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return fileState{size: -1}
	}
	if err != nil {
		t.Fatal(err)
	}
	return fileState{size: int64(len(b)), digest: sha256.Sum256(b)}
}

// TestTenThousandUnknownTokensCostNoWrites posts 10 000 requests, from
// several clients at once, to random endpoint tokens: every one is answered
// 404, none is stored, and neither the database file nor its write-ahead
// log changes by a byte.
func TestTenThousandUnknownTokensCostNoWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	skipOnPostgres(t, "compares the database file byte for byte")
	data := t.TempDir()
	s := start(t, data)
	setupGitHub(t, s)
	db := filepath.Join(data, "intake.db")
	dbBefore, walBefore := stateOf(t, db), stateOf(t, db+"-wal")
	unknownBefore := value(s.scrape(t), "intake_ingress_requests_total", "result", "unknown_endpoint")

	const total, clients = 10000, 16
	client := &http.Client{Timeout: 30 * time.Second, // a hang guard
		Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	body := bytes.Repeat([]byte("x"), 1024)
	tokens := make(chan string, total)
	for range total {
		b := make([]byte, 32)
		rand.Read(b)
		tokens <- base64.RawURLEncoding.EncodeToString(b)
	}
	close(tokens)
	statuses := make(chan int, total)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for tok := range tokens {
				resp, err := client.Post(s.url+"/webhooks/"+tok, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses <- resp.StatusCode
			}
		})
	}
	wg.Wait()
	close(statuses)
	notFound := 0
	for st := range statuses {
		if st == http.StatusNotFound {
			notFound++
		} else {
			t.Errorf("an unknown token was answered %d", st)
		}
	}
	if notFound != total {
		t.Fatalf("%d of %d unknown tokens answered 404", notFound, total)
	}

	// /metrics serves one render for a second: poll until it counts them.
	var f map[string]*dto.MetricFamily
	eventually(t, 10*time.Second, fmt.Sprintf("unknown_endpoint counts the %d requests", total), func() bool {
		f = s.scrape(t)
		return value(f, "intake_ingress_requests_total", "result", "unknown_endpoint")-unknownBefore == total
	})
	if got := value(f, "intake_ingress_requests_total", "result", "accepted"); got != 0 {
		t.Errorf("%v requests accepted", got)
	}
	if msgs := s.messages(t); len(msgs) != 0 {
		t.Errorf("%d messages stored", len(msgs))
	}
	if dbAfter := stateOf(t, db); dbAfter != dbBefore {
		t.Errorf("the database file changed: %d bytes before, %d after", dbBefore.size, dbAfter.size)
	}
	if walAfter := stateOf(t, db+"-wal"); walAfter != walBefore {
		t.Errorf("the write-ahead log changed: %d bytes before, %d after", walBefore.size, walAfter.size)
	}
	t.Logf("%d unknown tokens answered 404; database %d bytes, write-ahead log %d bytes, both unchanged",
		total, dbBefore.size, walBefore.size)
}
