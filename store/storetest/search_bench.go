package storetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The million-event search benchmark (DESIGN §13: a search over 7 days and
// 1 000 000 events answers in well under a second). Each store seeds the
// same events with one bulk insert of its own and hands them to
// BenchmarkSearch.
//
// Event i of n (1 ≤ i ≤ n) belongs to org i % 10, was created i·span/n
// before now, is of type SearchTypes[i % 3] and has the data
// SearchEventTemplate makes of i, that type, its creation in Unix seconds,
// customer i % SearchCustomers (the customer's number twice: its id and its
// email), (i·37) % 100000, i % 50, 1 + i % 3, i and SearchRegions[i % 3]:
// about 420 bytes of a Stripe-like invoice event. Each customer has n /
// SearchCustomers events, all in one org.
const (
	SearchCustomers     = 20000
	SearchEventTemplate = `{"id":"evt_%s","object":"event","type":"%s","created":%s,"livemode":false,` +
		`"data":{"object":{"id":"in_%s","object":"invoice","customer":"cus_%s","customer_email":"user%s@example.com",` +
		`"amount_paid":%s,"currency":"usd","status":"paid","lines":[{"price":"price_%s","quantity":%s}],` +
		`"metadata":{"order_id":"ord_%s","region":"%s"}}}}`
)

// SearchTypes and SearchRegions are the values the seeded events take in
// turn.
var (
	SearchTypes   = []string{"stripe.invoice.paid", "stripe.charge.succeeded", "stripe.customer.updated"}
	SearchRegions = []string{"eu", "us", "ap"}
)

// SkipUnlessMillion skips a benchmark that seeds a million rows unless
// INTAKE_BENCH_MILLION is set: seeding takes minutes, so CI never runs it.
func SkipUnlessMillion(b *testing.B) {
	b.Helper()
	if os.Getenv("INTAKE_BENCH_MILLION") == "" {
		b.Skip("seeds 1 000 000 events; set INTAKE_BENCH_MILLION=1 to run it")
	}
}

// searchCase is one kind of search the benchmark measures: its filter for
// the k-th query, and how many events it must find on its first page.
type searchCase struct {
	name   string
	filter func(k int) (intake.Scope, intake.EventFilter)
	want   int
}

// BenchmarkSearch measures searches over the n events seeded as above (orgs
// in the order of their number): each query asks for the newest 50 over
// the whole seeded span, in the scope of the org that holds what it looks
// for, and must find exactly what the seeding put there. It reports the
// median and the 95th percentile of the queries' latencies.
//
// The selective searches are those of a customer: its events by match on
// the customer's id, and by q of its email. The common ones find every
// event (a match and a word every event holds): their first page.
func BenchmarkSearch(b *testing.B, s intake.Store, orgs []string, n int, now time.Time, span time.Duration) {
	perCustomer := n / SearchCustomers
	customer := func(k int) int { return (k*7919 + 13) % SearchCustomers }
	scoped := func(c int, f intake.EventFilter) (intake.Scope, intake.EventFilter) {
		f.Since, f.Until, f.Limit = now.Add(-span), now.Add(time.Second), 50
		return intake.Scope{OrgID: orgs[c%10]}, f
	}
	search := func(match string, words ...string) intake.Search {
		m, err := intake.ParseMatch(match)
		if err != nil {
			b.Fatal(err)
		}
		return intake.Search{Match: m, Words: words}
	}
	cases := []searchCase{
		{"match=customer", func(k int) (intake.Scope, intake.EventFilter) {
			c := customer(k)
			return scoped(c, intake.EventFilter{Search: search(fmt.Sprintf(`{"data":{"object":{"customer":"cus_%d"}}}`, c))})
		}, min(50, perCustomer)},
		{"q=customer-email", func(k int) (intake.Scope, intake.EventFilter) {
			c := customer(k)
			return scoped(c, intake.EventFilter{Search: search("", fmt.Sprintf("USER%d@example.com", c))})
		}, min(50, perCustomer)},
		{"match+q=customer,type", func(k int) (intake.Scope, intake.EventFilter) {
			c := customer(k)
			return scoped(c, intake.EventFilter{Type: SearchTypes[0],
				Search: search(fmt.Sprintf(`{"data":{"object":{"customer":"cus_%d"}}}`, c), "invoice")})
		}, -1},
		{"match=common", func(k int) (intake.Scope, intake.EventFilter) {
			return scoped(k, intake.EventFilter{Search: search(`{"livemode":false,"data":{"object":{"currency":"usd"}}}`)})
		}, 50},
		{"q=common", func(k int) (intake.Scope, intake.EventFilter) {
			return scoped(k, intake.EventFilter{Search: search("", "example.com")})
		}, 50},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			k := 0
			for b.Loop() {
				sc, f := c.filter(k)
				k++
				start := time.Now()
				page, err := s.ListEvents(context.Background(), sc, f)
				took = append(took, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if c.want >= 0 && len(page.Items) != c.want || c.want < 0 && len(page.Items) == 0 {
					b.Fatalf("query %d found %d events, want %d", k, len(page.Items), c.want)
				}
			}
			slices.Sort(took)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[(len(took)*95+99)/100-1]), "p95-ms")
		})
	}
}
