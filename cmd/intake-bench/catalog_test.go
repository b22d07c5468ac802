package main

import (
	"strings"
	"testing"
)

func TestParseFlagsCatalogPairsSpawnTheirOwnServers(t *testing.T) {
	for _, args := range [][]string{
		{"--url", "http://127.0.0.1:8080", "--token", "t", "--catalog-pairs", "3"},
		{"--spawn", "--catalog-pairs", "3", "--baseline"},
		{"--spawn", "--catalog-pairs", "3", "--pipeline"},
		{"--spawn", "--catalog-pairs", "-1"},
	} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "--catalog-pairs") {
			t.Errorf("parseFlags(%q) = %v, want the catalog pairs refused", args, err)
		}
	}
	o, err := parseFlags([]string{"--spawn", "--catalog-pairs", "3", "--e2e"})
	if err != nil || o.catalogPairs != 3 {
		t.Fatalf("parseFlags: %+v %v", o, err)
	}
}

func TestMedianOfRatios(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{0.9}, 0.9}, {[]float64{1.1, 0.9, 1.0}, 1.0}, {[]float64{1, 0.8}, 0.9}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestParseStatCPUReadsUserAndSystemTime(t *testing.T) {
	stat := []byte("4242 (intake serve) S 1 4242 4242 0 -1 4194560 9 0 0 0 1234 566 0 0 20 0 12 0 100 0 0\n")
	if got, err := parseStatCPU(stat); err != nil || got != 18 {
		t.Fatalf("parseStatCPU = %v, %v; want 18 s", got, err)
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1")); err == nil {
		t.Fatal("a short stat line parsed")
	}
}
