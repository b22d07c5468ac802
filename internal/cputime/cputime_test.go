package cputime

import (
	"crypto/sha256"
	"runtime"
	"testing"
)

func TestProcessGrowsWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no process CPU time here")
	}
	before := Process()
	sum := sha256.Sum256(nil)
	for range 200_000 {
		sum = sha256.Sum256(sum[:])
	}
	if after := Process(); after <= before {
		t.Fatalf("CPU time went from %v to %v over 200 000 hashes", before, after)
	}
}
