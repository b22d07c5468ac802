package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/cputime"
	"github.com/intakehq/intake/internal/handoff"
)

// Counter reports how many statements a store ran, and in how many round
// trips, since it was opened. A store with no round trips to count (an
// embedded one) reports its statements for both.
type Counter func() (statements, roundTrips int64)

// BenchmarkPipeline takes b.N webhooks, one after the other, through every
// store call of the pipeline as one process makes them: the ingest that
// hands the message over, its settle with one event (1.5 KiB of data,
// pipelineData) fanned out (as judged) to one consumer (its route leased in
// the same commit), and the call's settle. It reports the statements and
// round trips per webhook.
func BenchmarkPipeline(b *testing.B, s intake.Store, count Counter) {
	one := pipeline(b, s)
	if err := one(-1); err != nil { // warm caches and prepared statements
		b.Fatal(err)
	}
	statements, roundTrips := count()
	b.ResetTimer()
	for i := range b.N {
		if err := one(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, rt := count()
	b.ReportMetric(float64(st-statements)/float64(b.N), "statements/webhook")
	b.ReportMetric(float64(rt-roundTrips)/float64(b.N), "round-trips/webhook")
}

// BenchmarkPipelineParallel takes b.N webhooks through the same store calls
// from 64 goroutines at once, as a loaded server makes them: the settles
// that meet share transactions. It reports the statements and round trips
// a webhook costs, and the CPU time of the whole process per webhook
// (cpu-µs/webhook, the store's work and its callers').
func BenchmarkPipelineParallel(b *testing.B, s intake.Store, count Counter) {
	one := pipeline(b, s)
	if err := one(-1); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	statements, roundTrips := count()
	cpu := cputime.Process()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := one(int(next.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	st, rt := count()
	b.ReportMetric(float64(st-statements)/float64(b.N), "statements/webhook")
	b.ReportMetric(float64(rt-roundTrips)/float64(b.N), "round-trips/webhook")
	b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N), "cpu-µs/webhook")
}

// pipelineData is an event's data as a provider sends it, so the pipeline
// carries what a webhook's event weighs: a Stripe invoice.paid of about
// 1.5 KiB, id being its event's.
func pipelineData(id string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2024-06-20","created":1764504000,`+
		`"livemode":false,"pending_webhooks":1,"request":{"id":"req_8KcTq3uWz1","idempotency_key":null},`+
		`"type":"invoice.paid","data":{"object":{"id":"in_1QF8Zx2eZvKYlo2C5kqT0b3m","object":"invoice","account_country":"US",`+
		`"account_name":"Acme Corporation","amount_due":4900,"amount_paid":4900,"amount_remaining":0,"attempt_count":1,"attempted":true,`+
		`"billing_reason":"subscription_cycle","charge":"ch_3QF8Zy2eZvKYlo2C1xV0d9Qa","collection_method":"charge_automatically",`+
		`"currency":"usd","customer":"cus_R7sKq2LmN4pX8z","customer_email":"ann.lee@example.com","customer_name":"Ann Lee",`+
		`"hosted_invoice_url":"https://invoice.stripe.com/i/acct_1Nv0FG2eZvKYlo2C/test_YWNjdF8xTnYw",`+
		`"lines":{"object":"list","data":[{"id":"il_1QF8Zx2eZvKYlo2CbW9r4tMn","object":"line_item","amount":4900,"currency":"usd",`+
		`"description":"1 × Team plan (at $49.00 / month)","period":{"end":1767182400,"start":1764504000},`+
		`"price":{"id":"price_1Nv0Hk2eZvKYlo2CqZ3s8yTu","object":"price","product":"prod_Oj8sK2mN4pQ7rX",`+
		`"recurring":{"interval":"month","interval_count":1},"unit_amount":4900},"quantity":1,"proration":false,`+
		`"subscription":"sub_1Nv0Ia2eZvKYlo2CxY7d3kLm","type":"subscription"}],"has_more":false,"total_count":1,`+
		`"url":"/v1/invoices/in_1QF8Zx2eZvKYlo2C5kqT0b3m/lines"},"metadata":{"order_id":"ord_20261130_8841"},`+
		`"number":"ACME-0042-0017","paid":true,"period_end":1764504000,"period_start":1761912000,"status":"paid",`+
		`"subscription":"sub_1Nv0Ia2eZvKYlo2CxY7d3kLm","subtotal":4900,"tax":0,"total":4900,"webhooks_delivered_at":1764507601}}}`, id))
}

// pipeline returns one webhook's store calls: i numbers the webhook.
func pipeline(b *testing.B, s intake.Store) func(i int) error {
	ctx := context.Background()
	f := newFixture(b, s, "pipeline")
	c := f.consumer(b, s, "app", intake.Controls{})
	lease := time.Minute
	return func(i int) error {
		h := handoff.NewMessages(1, lease)
		at := t0.Add(time.Duration(i) * time.Millisecond)
		m := f.message(fmt.Sprintf(`{"id":"evt_%d"}`, i), at)
		h.Reserve(m)
		if err := s.Ingest(ctx, m); err != nil {
			return err
		}
		h.Give(m)
		claim := <-h.Claims()
		h.Taken(m.OrgID)
		e := f.event(m, fmt.Sprintf("evt_%d", i))
		e.ObjectIDs, e.NextAttemptAt, e.Data = nil, at, pipelineData(e.ProviderEventID)
		st := processed(claim, identity(m, e.ProviderEventID), e)
		st.FanOuts = map[string]intake.FanOut{e.ID: {Routes: []intake.FanOutRoute{{ConsumerID: c.ID}}, Lease: lease}}
		out, err := s.SettleMessage(ctx, at, st)
		if err != nil || len(out.Calls) != 1 {
			return fmt.Errorf("the settle leased %d calls, want 1: %v", len(out.Calls), err)
		}
		_, err = s.SettleRoute(ctx, at, result(out.Calls[0], at, intake.DeliveryHandled), backoff)
		return err
	}
}
