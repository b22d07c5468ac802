package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsReplicateSpawnsItsOwnEmbeddedStoreServers(t *testing.T) {
	for _, args := range [][]string{
		{"--url", "http://127.0.0.1:8080", "--token", "t", "--replicate", "file:///tmp/r"},
		{"--spawn", "--replicate", "file:///tmp/r", "--db", "postgres://x"},
		{"--spawn", "--replicate", "file:///tmp/r", "--rate", "100"},
		{"--spawn", "--replicate", "file:///tmp/r", "--e2e"},
		{"--spawn", "--replicate", "http://127.0.0.1:8333/b"},
		{"--spawn", "--replicate", "file:///tmp/r", "--replicate-rounds", "0"},
		{"--spawn", "--restore-bytes", "1000"},
		{"--spawn", "--lag-rate", "10"},
	} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "--replicate") {
			t.Errorf("parseFlags(%q) = %v, want the replication settings refused", args, err)
		}
	}
	o, err := parseFlags([]string{"--spawn", "--replicate", "s3://b/p?endpoint=http://127.0.0.1:8333", "--restore-bytes", "1073741824"})
	if err != nil || o.replicateRounds != 3 || o.lagRate != 1000 || o.restoreBytes != 1<<30 {
		t.Fatalf("parseFlags: %+v %v", o, err)
	}
}

func TestEachReplicatedServerShipsToALocationOfItsOwn(t *testing.T) {
	for u, want := range map[string]string{
		"s3://b/p?endpoint=http://127.0.0.1:8333&region=us-east-1": "s3://b/p/x?endpoint=http://127.0.0.1:8333&region=us-east-1",
		"s3://b?endpoint=e":     "s3://b/x?endpoint=e",
		"file:///mnt/backup/":   "file:///mnt/backup/x",
		"file:///mnt/backup/in": "file:///mnt/backup/in/x",
	} {
		if got := replicaBelow(u, "x"); got != want {
			t.Errorf("replicaBelow(%q) = %q, want %q", u, got, want)
		}
	}
	a, at := replicateStage(replAsync, "file:///r")
	s, st := replicateStage(replSync, "file:///r")
	n, nt := replicateStage(replNone, "file:///r")
	if at == st || !strings.HasPrefix(at, "file:///r/bench-") || nt != "" {
		t.Errorf("replicas %q %q %q: want two of their own, none without replication", at, st, nt)
	}
	for _, c := range []struct {
		st   stage
		want string
	}{{a, "INTAKE_REPLICATE=" + at + " INTAKE_REPLICATE_SYNC=false"}, {s, "INTAKE_REPLICATE=" + st + " INTAKE_REPLICATE_SYNC=true"},
		{n, "INTAKE_REPLICATE= INTAKE_REPLICATE_SYNC=false"}} {
		if got := strings.Join(c.st.env, " "); got != c.want {
			t.Errorf("%s: env %q, want %q", c.st.name, got, c.want)
		}
	}
}

func TestSampleLagReadsTheLagReadyzReports(t *testing.T) {
	lags := []string{"replica: lag 1.5s, last sync none yet, 0 failed syncs", "replica: lag 250ms, last sync 2026-12-05T06:00:00Z, 0 failed syncs",
		"replica unreachable: lag 12s, last sync 2026-12-05T06:00:00Z, 3 failed syncs: dial tcp: refused"}
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ready\n%s\n", lags[n%len(lags)])
		n++
	}))
	defer srv.Close()
	c := srv.Client()
	var got []time.Duration
	for range lags {
		lag, err := readLag(context.Background(), c, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, lag)
	}
	if want := []time.Duration{1500 * time.Millisecond, 250 * time.Millisecond, 12 * time.Second}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lags %v, want %v", got, want)
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ready") }))
	defer bare.Close()
	if _, err := readLag(context.Background(), bare.Client(), bare.URL); err == nil {
		t.Error("a /readyz without a replica line gave a lag")
	}
}
