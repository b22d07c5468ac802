package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"modernc.org/quickjs"
)

func BenchmarkFilter(b *testing.B) {
	e := newEngine(b, Config{})
	in := Input{Event: mustEvent(b, stripeInvoice), Headers: map[string]string{"x-github-event": "push"}}
	const filter = `event.type.startsWith("stripe.invoice.") && !event.replay && event.data.object.amount >= 100000`
	ctx := context.Background()
	for b.Loop() {
		ok, err := e.Filter(ctx, filter, in)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkDecodeEvent(b *testing.B) {
	raw := []byte(stripeInvoice)
	for b.Loop() {
		if _, err := DecodeEvent(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// tenLines is the 10-line transform of the benchmarks: read a few fields,
// build a chat message, add a header.
const tenLines = `function transform(event, context) {
  var o = event.data.object;
  var amount = (o.amount / 100).toFixed(2) + " " + o.currency.toUpperCase();
  var lines = ["Invoice paid", "Amount: " + amount, "Tenant: " + o.metadata.tenant];
  if (event.replay) {
    lines.push("(replayed)");
  }
  var text = lines.join("\n");
  return {body: {text: text, channel: context.channel}, headers: {"X-Tenant": o.metadata.tenant}};
}`

func BenchmarkTransform(b *testing.B) {
	e := newEngine(b, Config{})
	s := script(tenLines)
	ev := json.RawMessage(stripeInvoice)
	tctx := map[string]string{"channel": "#billing"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.Transform(ctx, s, ev, tctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransformInProcess is the call as it ran before script hosts:
// the same arguments, VM and result checks, in this process, so the
// difference from BenchmarkTransform is what a host costs a call.
func BenchmarkTransformInProcess(b *testing.B) {
	r := newVMRunner(Config{}.withDefaults())
	defer r.close()
	s := script(tenLines)
	key := version(string(KindTransform), s.Scope, s.Source)
	ev := json.RawMessage(stripeInvoice)
	tctx := map[string]string{"channel": "#billing"}
	for b.Loop() {
		c, err := json.Marshal(tctx)
		if err != nil {
			b.Fatal(err)
		}
		args := append(append(append(append(append(make([]byte, 0, len(ev)+len(c)+3), '['), ev...), ','), c...), ']')
		raw, _, err := r.call(KindTransform, key, s.Source, string(args), true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := parseOutput(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScriptHostStart is what a call killed at its limit costs the
// next one: a host started, until it is ready.
func BenchmarkScriptHostStart(b *testing.B) {
	p := newHostPool(Config{}.withDefaults())
	for b.Loop() {
		h, err := p.start(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		h.close()
	}
}

// BenchmarkTransformFreshVM is what a fresh VM per call would cost: load
// the script, call it once, close the VM.
func BenchmarkTransformFreshVM(b *testing.B) {
	e := newEngine(b, Config{})
	args := `[` + stripeInvoice + `,{"channel":"#billing"}]`
	for b.Loop() {
		vm, err := newVMRunner(e.cfg).newVM(KindTransform, tenLines)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := vm.call.Call(quickjs.UndefinedValue, args, e.cfg.MaxOutput); err != nil {
			b.Fatal(err)
		}
		vm.close()
	}
}

func BenchmarkNewVM(b *testing.B) {
	e := newEngine(b, Config{})
	for b.Loop() {
		vm, err := newVMRunner(e.cfg).newVM(KindTransform, tenLines)
		if err != nil {
			b.Fatal(err)
		}
		vm.close()
	}
}

// BenchmarkInterpretInProcess is BenchmarkInterpret as it ran before
// script hosts, in this process.
func BenchmarkInterpretInProcess(b *testing.B) {
	r := newVMRunner(Config{}.withDefaults())
	defer r.close()
	s := script(acmeInterpret)
	key := version(string(KindInterpret), s.Scope, s.Source)
	req := acmeRequest(`{"changes": [{"id": "c1", "what": "deal.won", "at": "2026-11-30T10:00:00Z", "object": {"id": "d-9"}}]}`)
	for b.Loop() {
		args, err := json.Marshal([]Request{req})
		if err != nil {
			b.Fatal(err)
		}
		raw, _, err := r.call(KindInterpret, key, s.Source, string(args), true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := parseEvents(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInterpret(b *testing.B) {
	e := newEngine(b, Config{})
	r := acmeRequest(`{"changes": [{"id": "c1", "what": "deal.won", "at": "2026-11-30T10:00:00Z", "object": {"id": "d-9"}}]}`)
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.Interpret(ctx, script(acmeInterpret), r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThousandScripts calls 1 000 distinct scripts round robin under
// the default cap, so nearly every call replaces the least recently used
// VM, and reports the VMs alive and the resident memory of this process
// and its script hosts: its peak and its growth over the start.
func BenchmarkThousandScripts(b *testing.B) {
	e := newEngine(b, Config{})
	scripts := make([]Script, 1000)
	for i := range scripts {
		src := fmt.Sprintf(`var table = new Array(2000).fill(%d); function transform(event) { return {body: table[0]}; }`, i)
		scripts[i] = Script{Scope: fmt.Sprintf("org-%d", i%50), Source: src}
	}
	ctx := context.Background()
	ev := json.RawMessage(`{}`)
	runtime.GC()
	base := rss(b, e)
	peakVMs, peakRSS := 0, 0
	i := 0
	for b.Loop() {
		if _, err := e.Transform(ctx, scripts[i%len(scripts)], ev, nil); err != nil {
			b.Fatal(err)
		}
		i++
		if i%100 == 0 {
			peakVMs = max(peakVMs, e.VMs())
			peakRSS = max(peakRSS, rss(b, e))
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(max(peakVMs, e.VMs())), "peak-vms")
	b.ReportMetric(float64(max(peakRSS, rss(b, e)))/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(max(peakRSS, rss(b, e))-base)/(1<<20), "rss-growth-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "go-heap-MiB")
}

// rss reads the resident set size of this process and e's script hosts,
// in bytes.
func rss(b *testing.B, e *Engine) int {
	n := 0
	for _, p := range append([]string{"self"}, hostProcs(e)...) {
		raw, err := os.ReadFile("/proc/" + p + "/statm")
		if err != nil {
			b.Skip("no /proc/"+p+"/statm:", err)
		}
		fields := strings.Fields(string(raw))
		pages, err := strconv.Atoi(fields[1])
		if err != nil {
			b.Fatal(err)
		}
		n += pages * os.Getpagesize()
	}
	return n
}

func hostProcs(e *Engine) []string {
	var ps []string
	for _, pid := range hostPIDs(e) {
		ps = append(ps, strconv.Itoa(pid))
	}
	return ps
}
