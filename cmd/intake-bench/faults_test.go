package main

import (
	"strings"
	"testing"

	"github.com/intakehq/intake/internal/faults"
)

func TestFaultsSpawnsItsServersAndRefusesOtherModesAndUnknownFaults(t *testing.T) {
	o, err := parseFlags([]string{"--faults", "--fault", "reset_peer", "--fault", "partition both ways"})
	if err != nil || !o.spawn || !o.faultNames["reset_peer"] || !o.faultNames["partition both ways"] || len(o.faultNames) != 2 {
		t.Fatalf("parseFlags = %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"--faults", "--url", "http://127.0.0.1:1", "--token", "t"},
		{"--faults", "--e2e"},
		{"--faults", "--pipeline"},
		{"--faults", "--noisy"},
		{"--spawn", "--fault", "reset_peer"},
		{"--faults", "--fault", "a meteor"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) took it", args)
		}
	}
}

func TestAFaultRowFailsOnEachBrokenPromiseAndOnNothingElse(t *testing.T) {
	ok := faults.Tally{Fault: "reset_peer", Posted: 10, Acked: 10, Delivered: 10, Redeliveries: 3, Answers: map[int]int{202: 4, 503: 6}}
	if why := faultFailure(ok); why != "" {
		t.Fatalf("a row that keeps every promise fails: %s", why)
	}
	for want, breakIt := range map[string]func(*faults.Tally){
		"never reached":       func(t *faults.Tally) { t.Lost = 1 },
		"more than one event": func(t *faults.Tally) { t.Twice = 1 },
		"answered map[500:1]": func(t *faults.Tally) { t.Answers = map[int]int{500: 1} },
		"unanswered":          func(t *faults.Tally) { t.Unanswered = 1 },
		"9 of 10":             func(t *faults.Tally) { t.Acked = 9 },
	} {
		bad := ok
		breakIt(&bad)
		if why := faultFailure(bad); !strings.Contains(why, want) {
			t.Errorf("faultFailure = %q, want it to say %q", why, want)
		}
	}
}
