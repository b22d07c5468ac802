package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTrackerResultOfCountsOnlyTheRunWithThePrefix(t *testing.T) {
	tr := newTracker()
	t0 := time.Now()
	tr.sent("alone-1", t0)
	tr.acked("alone-1")
	tr.got("alone-1", t0.Add(ms(10)))
	tr.sent("attack-1", t0)
	tr.acked("attack-1")
	tr.got("attack-1", t0.Add(ms(500)))
	tr.sent("attack-2", t0)
	tr.acked("attack-2")

	alone, under := tr.resultOf("alone-"), tr.resultOf("attack-")
	if alone.Delivered != 1 || alone.Missing != 0 || alone.Latency.P50 != 10 {
		t.Errorf("alone = %+v, %+v", alone, alone.Latency)
	}
	if under.Delivered != 1 || under.Missing != 1 || under.Latency.P50 != 500 {
		t.Errorf("under attack = %+v, %+v", under, under.Latency)
	}
	if all := tr.result(); all.Delivered != 2 || all.Missing != 1 {
		t.Errorf("all = %+v", all)
	}
}

func TestAnAttackMeetsItsTargetOnlyWithinThreeTimesAloneUnderASecondAckedWithinASecondAndNothingMissing(t *testing.T) {
	res := func(name string, alone, under float64, missing int, rss int64) *AttackResult {
		return &AttackResult{Name: name, Alone: &E2E{Latency: &Latency{P50: alone}}, Under: &E2E{Missing: missing, Latency: &Latency{P50: under}},
			RSSRise: rss, PeakRSS: rss}
	}
	acked := func(r *AttackResult, p99 float64) *AttackResult { r.AckUnder.P99 = p99; return r }
	refused := func(r *AttackResult) *AttackResult { r.Refused = 1; return r }
	for _, c := range []struct {
		r    *AttackResult
		want bool
	}{
		{res("hanging-consumer", 30, 60, 0, 0), true},
		{res("hanging-consumer", 60, 180, 0, 0), true},
		{res("hanging-consumer", 60, 181, 0, 0), false},
		// Alone counts as at least 50 ms.
		{res("searches", 10, 150, 0, 0), true},
		{res("searches", 10, 151, 0, 0), false},
		{res("hanging-consumer", 400, 1000, 0, 0), false},
		{res("hanging-consumer", 30, 30, 1, 0), false},
		{refused(res("bodies", 30, 30, 0, 0)), false},
		{acked(res("metrics", 30, 30, 0, 0), 999), true},
		{acked(res("metrics", 30, 30, 0, 0), 1000), false},
		{res("big-body", 30, 30, 0, 255<<20), true},
		{res("big-body", 30, 30, 0, 256<<20), false},
		{res("bodies", 30, 30, 0, 511<<20), true},
		{res("bodies", 30, 30, 0, 512<<20), false},
	} {
		if got := c.r.meets(); got != c.want {
			t.Errorf("%s: alone %v, under %v, missing %d, refused %d, ack p99 %v, RSS %d: meets = %v", c.r.Name, c.r.Alone.Latency.P50,
				c.r.Under.Latency.P50, c.r.Under.Missing, c.r.Refused, c.r.AckUnder.P99, c.r.RSSRise, got)
		}
	}
	late := res("hanging-notify", 30, 30, 0, 0)
	late.Notify = &Notices{Alone: Latency{P50: 500}, Under: Latency{P50: 1600}}
	if late.meets() {
		t.Error("a notification 3.2× as late as alone meets the target")
	}
}

func TestNoisyReportTextShowsEveryAttackItsRatiosAndWhatWasNotAvailable(t *testing.T) {
	r := &NoisyReport{Store: "sqlite", Rate: 20, Duration: "10s", Attacks: []*AttackResult{
		{Name: "hanging-consumer", What: "B hangs", Alone: &E2E{Latency: &Latency{P50: 30, P99: 60}},
			Under: &E2E{Missing: 2, Latency: &Latency{P50: 2300, P99: 9000}}, RatioP50: 76.7, RatioP99: 150, RSSRise: 3 << 20,
			Notes: "B's backlog: 300 webhooks"},
		{Name: "native-loop", What: "dry runs", Unavailable: "POST /api/v1/rules/test: 404"},
	}}
	var out bytes.Buffer
	r.writeText(&out)
	for _, want := range []string{"sqlite, org A at 20 webhooks/s", "hanging-consumer", "2300.0", "76.7", "missed",
		"native-loop", "not available", "B's backlog: 300 webhooks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNoisyFlagsSpawnAndCheckTheAttackNames(t *testing.T) {
	o, err := parseFlags([]string{"--noisy", "--attacks", "big-body,many-events,searches,metrics,events-rate,catalog,bodies,consumer-tests"})
	if err != nil || !o.spawn || strings.Join(o.attacks, ",") != "big-body,many-events,searches,metrics,events-rate,catalog,bodies,consumer-tests" {
		t.Fatalf("parseFlags = %+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"--noisy", "--attacks", "fork-bomb"}); err == nil {
		t.Error("an unknown attack was accepted")
	}
	if _, err := parseFlags([]string{"--noisy", "--pipeline"}); err == nil {
		t.Error("--noisy with --pipeline was accepted")
	}
}

func TestBigBodyIsJSONOfTheAskedSize(t *testing.T) {
	for _, size := range []int{0, 8, 1 << 20} {
		b := bigBody(size)
		var v struct{ S string }
		if err := json.Unmarshal(b, &v); err != nil || strings.Trim(v.S, "<") != "" {
			t.Fatalf("size %d: not a JSON string of '<': %v", size, err)
		}
		if size >= 8 && len(b) != size {
			t.Errorf("size %d: body is %d bytes", size, len(b))
		}
	}
}

func TestAnswersCountByStatusAndNotWhatTheEndOfThePhaseCutShort(t *testing.T) {
	a := &answers{by: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	a.count(ctx, 200, nil)
	a.count(ctx, 429, nil)
	a.count(ctx, 429, nil)
	a.count(ctx, 0, errors.New("connection reset"))
	cancel()
	a.count(ctx, 0, context.Canceled)
	if got := a.String(); got != "200:1 429:2 transport:1 (1 unanswered at the phase's end)" {
		t.Errorf("answers = %q", got)
	}
}
