package main

import "testing"

func TestShortDurationIsTheSameLength(t *testing.T) {
	for in, want := range map[string]string{"720h0m0s": "720h", "1h30m0s": "1h30m", "1m30s": "1m30s", "30m0s": "30m",
		"10m0s": "10m", "100h0m0s": "100h", "0s": "0s", "": "", "1h0m5s": "1h0m5s"} {
		got := shortDuration(in)
		if got != want {
			t.Errorf("shortDuration(%q) = %q, want %q", in, got, want)
		}
		a, errA := parseDuration(in)
		b, errB := parseDuration(got)
		if errA != nil || errB != nil || a != b {
			t.Errorf("shortDuration(%q) = %q: %v, %v", in, got, a, b)
		}
	}
}
