package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/catalog"
	"github.com/intakehq/intake/internal/testkit"
)

// benchData is a 2 KiB event body of a realistic shape.
func benchData(i int) []byte {
	return fmt.Appendf(nil, `{"id":"evt_%d","created_at":"2026-11-30T12:00:00Z","customer":{"id":"cus_%d","email":"a%d@example.com"},"lines":[{"sku":"a","qty":1},{"sku":"b","qty":2}],"note":%q}`,
		i, i, i, strings.Repeat("x", 1800))
}

// BenchmarkObserve is what the worker pays per settle of one event: the
// learner's count and sample.
func BenchmarkObserve(b *testing.B) {
	s := testkit.SQLite(b)
	o := newOrg(&testing.T{}, s)
	l := catalog.New(catalog.Config{Store: s, Clock: testkit.NewClock(t0)})
	events := make([]intake.Event, 1000)
	for i := range events {
		events[i] = o.event(fmt.Sprintf("bench.type%d", i%10), string(benchData(i)), t0.Add(time.Duration(i)*time.Millisecond))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Observe(events[i%len(events) : i%len(events)+1])
	}
}

// BenchmarkFlushASecondOf1000Events is the learner's own work for a second
// of 1000 events of 10 types: inferring the samples, merging, writing.
func BenchmarkFlushASecondOf1000Events(b *testing.B) {
	s := testkit.SQLite(b)
	o := newOrg(&testing.T{}, s)
	clock := testkit.NewClock(t0)
	l := catalog.New(catalog.Config{Store: s, Clock: clock})
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		second := t0.Add(time.Duration(i) * time.Second)
		clock.Set(second)
		for j := range 1000 {
			l.Observe([]intake.Event{o.event(fmt.Sprintf("bench.type%d", j%10), string(benchData(j)), second.Add(time.Duration(j)*time.Millisecond))})
		}
		b.StartTimer()
		if err := l.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
