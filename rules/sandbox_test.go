package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// counter counts its calls in a global, and spins or allocates without end
// when the event asks it to, so a test sees whether the next call got the
// same VM (the count goes on) or a fresh one (it starts again).
const counter = `var n = 0;
function transform(event) {
  n++;
  if (event.spin) { for (;;) {} }
  if (event.grow) { var b = []; for (;;) { b.push(new Uint8Array(1 << 20)); } }
  if (event.hoard) { var a = []; for (;;) { a.push(new Array(100000).fill(n)); } }
  return {body: n};
}`

func count(t *testing.T, e *Engine, s Script) string {
	t.Helper()
	out, err := e.Transform(context.Background(), s, json.RawMessage(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(out.Body)
}

func TestEndlessLoopIsStoppedAtTheTimeLimitAndItsVMDiscarded(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: 200 * time.Millisecond})
	s := script(counter)
	if got := count(t, e, s); got != "1" {
		t.Fatalf("first call counted %s", got)
	}
	_, err := e.Transform(context.Background(), s, json.RawMessage(`{"spin": true}`), nil)
	se := scriptErr(t, err, ReasonTimeout)
	if se.Error() != "transform_error: the script ran over its time limit of 200ms" {
		t.Errorf("error %q", se)
	}
	if e.VMs() != 0 {
		t.Fatalf("%d VMs alive after the timeout, want the spinning one closed", e.VMs())
	}
	if got := count(t, e, s); got != "1" {
		t.Fatalf("the call after the timeout counted %s, want 1 from a fresh VM", got)
	}
}

func TestEndlessAllocationIsStoppedAtTheMemoryLimitAndItsVMDiscarded(t *testing.T) {
	e := newEngine(t, Config{})
	s := script(counter)
	for _, bomb := range []string{`{"grow": true}`, `{"hoard": true}`} {
		if got := count(t, e, s); got != "1" {
			t.Fatalf("call before %s counted %s, want 1 from a fresh VM", bomb, got)
		}
		_, err := e.Transform(context.Background(), s, json.RawMessage(bomb), nil)
		se := scriptErr(t, err, ReasonMemory)
		if se.Error() != "transform_error: the script ran out of its memory limit of 16 MiB" {
			t.Errorf("error %q", se)
		}
		if e.VMs() != 0 {
			t.Fatalf("%d VMs alive after running out of memory, want it closed", e.VMs())
		}
	}
}

func TestOutputOverTheLimitIsRefusedNotTruncated(t *testing.T) {
	e := newEngine(t, Config{})
	for name, tc := range map[string]struct {
		ret    string
		reason string
	}{
		// Concatenation shares one 1 MiB piece, so 50 MB fit in the VM.
		"50 MB string body":  {`var piece = "x".repeat(1 << 20), s = ""; for (var i = 0; i < 50; i++) s += piece; return {body: s};`, ReasonOutput},
		"50 MB in one piece": {`return {body: "x".repeat(50 << 20)};`, ReasonMemory},
		"2 MiB JSON body":    {`return {body: {text: "x".repeat(2 << 20)}};`, ReasonOutput},
		"1 MiB header":       {`return {body: 1, headers: {"x-big": "x".repeat(1 << 20)}};`, ReasonOutput},
	} {
		src := "function transform(event) { " + tc.ret + " }"
		out, err := e.Transform(context.Background(), script(src), json.RawMessage(`{}`), nil)
		if out != nil {
			t.Fatalf("%s: %d bytes came back, want it refused", name, len(out.Body))
		}
		se := scriptErr(t, err, tc.reason)
		if tc.reason == ReasonOutput && (!strings.Contains(se.Message, "over the limit of 1048576 bytes") || !strings.Contains(se.Message, "refused whole")) {
			t.Errorf("%s: error %q, want it to name the limit", name, se)
		}
	}
	src := `function transform(event) { return {body: "x".repeat((1 << 20) - 100)}; }`
	if _, err := e.Transform(context.Background(), script(src), json.RawMessage(`{}`), nil); err != nil {
		t.Fatalf("output just under the limit: %v", err)
	}
}

func TestSandboxHasNoIOTimersOrModules(t *testing.T) {
	e := newEngine(t, Config{})
	names := []string{"require", "fetch", "std", "os", "process", "module", "exports", "setTimeout", "setInterval",
		"setImmediate", "queueMicrotask", "XMLHttpRequest", "WebSocket", "importScripts", "Deno", "Bun", "print",
		"console", "scriptArgs", "WebAssembly"}
	quoted, _ := json.Marshal(names)
	src := `function transform(event) {
  return {body: ` + string(quoted) + `.filter(function (n) { return typeof globalThis[n] !== "undefined"; })};
}`
	out, err := e.Transform(context.Background(), script(src), json.RawMessage(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Body) != "[]" {
		t.Fatalf("globals present in the sandbox: %s", out.Body)
	}

	for call, want := range map[string]string{
		`require("fs")`:                                                "ReferenceError: 'require' is not defined",
		`fetch("http://169.254.169.254/")`:                             "ReferenceError: 'fetch' is not defined",
		`setTimeout(function () {}, 1)`:                                "ReferenceError: 'setTimeout' is not defined",
		`std.open("/etc/passwd", "r")`:                                 "ReferenceError: 'std' is not defined",
		`Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)`: "TypeError",
	} {
		src := `function transform(event) { return {body: ` + call + `}; }`
		_, err := e.Transform(context.Background(), script(src), json.RawMessage(`{}`), nil)
		if se := scriptErr(t, err, ReasonThrow); !strings.Contains(se.Message, want) {
			t.Errorf("%s: %q, want %q", call, se, want)
		}
	}

	// A dynamic import only ever makes a Promise, which no job loop settles
	// and which is refused as a result.
	_, err = e.Transform(context.Background(), script(`function transform(event) { return import("os"); }`), json.RawMessage(`{}`), nil)
	if se := scriptErr(t, err, ReasonResult); !strings.Contains(se.Message, "Promise") {
		t.Errorf("dynamic import: %q", se)
	}
	if err := e.Check(context.Background(), "", KindTransform, `import * as os from "os"; function transform() {}`); err == nil {
		t.Error("a static import compiled")
	}
}

func TestScriptStateNeverCrossesScopes(t *testing.T) {
	e := newEngine(t, Config{})
	a, b := Script{Scope: "org-a", Source: counter}, Script{Scope: "org-b", Source: counter}
	if got := count(t, e, a); got != "1" {
		t.Fatal(got)
	}
	if got := count(t, e, a); got != "2" {
		t.Fatalf("second call in one scope counted %s, want 2 from the pooled VM", got)
	}
	if got := count(t, e, b); got != "1" {
		t.Fatalf("the same source in another scope counted %s, want 1: it saw org-a's state", got)
	}
}

func TestConcurrentCallsEachGetTheirOwnVM(t *testing.T) {
	e := newEngine(t, Config{Hosts: 2, HostVMs: 2})
	const goroutines, calls, scripts = 16, 40, 6
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				k := (g + i) % scripts
				src := fmt.Sprintf(`function transform(event) { var s = 0; for (var i = 0; i < 1000; i++) s += i; return {body: {k: %d, id: event.id, s: s}}; }`, k)
				ev := fmt.Sprintf(`{"id": "%d-%d"}`, g, i)
				out, err := e.Transform(context.Background(), script(src), json.RawMessage(ev), nil)
				if err != nil {
					errs <- err
					return
				}
				want := fmt.Sprintf(`{"k":%d,"id":"%d-%d","s":499500}`, k, g, i)
				if string(out.Body) != want {
					errs <- fmt.Errorf("got %s, want %s", out.Body, want)
					return
				}
				if n := e.VMs(); n > 4 {
					errs <- fmt.Errorf("%d VMs alive, over the cap of 2 hosts × 2", n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestOtherScriptsRunWhileOneSpins(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: time.Hour, Hosts: 4})
	spinCtx, stopSpinning := context.WithCancel(context.Background())
	defer stopSpinning()
	spun := make(chan error, 1)
	go func() {
		_, err := e.Transform(spinCtx, script(counter), json.RawMessage(`{"spin": true}`), nil)
		spun <- err
	}()
	waitFor(t, func() bool { return busyHosts(e) == 1 && len(hostPIDs(e)) == 1 })
	spinner := hostPIDs(e)[0]

	other := script(`function transform(event) { return {body: event.n * 2}; }`)
	var wg sync.WaitGroup
	results := make(chan string, 30)
	for i := range 30 {
		wg.Go(func() {
			out, err := e.Transform(context.Background(), other, json.RawMessage(fmt.Sprintf(`{"n": %d}`, i)), nil)
			if err != nil {
				results <- err.Error()
				return
			}
			results <- string(out.Body)
		})
	}
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		if r == "" || strings.Contains(r, "error") {
			t.Errorf("call beside the spinning script: %s", r)
		}
		n++
	}
	select {
	case err := <-spun:
		t.Fatalf("the spinning script returned (%v) before the others were checked", err)
	default:
	}
	if n != 30 {
		t.Fatalf("%d calls completed, want 30", n)
	}

	stopSpinning()
	if err := <-spun; err != context.Canceled {
		t.Fatalf("spinning script after its context ended: %v, want context.Canceled", err)
	}
	if busyHosts(e) != 0 || reaped(spinner) != nil {
		t.Errorf("the spinning script's host lives on: %d busy, %v", busyHosts(e), reaped(spinner))
	}
}

func TestAThousandScriptsStayWithinTheVMCap(t *testing.T) {
	e := newEngine(t, Config{Hosts: 1, HostVMs: 8})
	for i := range 1000 {
		src := fmt.Sprintf(`var big = new Array(1000).fill(%d); function transform(event) { return {body: big[0]}; }`, i)
		out, err := e.Transform(context.Background(), Script{Scope: fmt.Sprintf("org-%d", i%7), Source: src}, json.RawMessage(`{}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Body) != fmt.Sprint(i) {
			t.Fatalf("script %d returned %s", i, out.Body)
		}
		if n := e.VMs(); n > 8 {
			t.Fatalf("after script %d: %d VMs alive, over the cap of 8", i, n)
		}
	}
	if n := e.VMs(); n != 8 {
		t.Fatalf("%d VMs alive after 1000 scripts, want the cap of 8 filled with the most recent", n)
	}
	e.Close()
	if n := e.VMs(); n != 0 {
		t.Fatalf("%d VMs alive after Close", n)
	}
}

func TestCallerWaitsForAVMWhenAllAreBusyAndGivesUpWithItsContext(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: time.Hour, Hosts: 1})
	spinCtx, stopSpinning := context.WithCancel(context.Background())
	spun := make(chan error, 1)
	go func() {
		_, err := e.Transform(spinCtx, script(counter), json.RawMessage(`{"spin": true}`), nil)
		spun <- err
	}()
	waitFor(t, func() bool { return busyHosts(e) == 1 })

	waitCtx, giveUp := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := e.Transform(waitCtx, script(`function transform() { return null; }`), json.RawMessage(`{}`), nil)
		waited <- err
	}()
	giveUp()
	if err := <-waited; err != context.Canceled {
		t.Fatalf("caller waiting for a VM: %v, want context.Canceled", err)
	}

	stopSpinning()
	<-spun
	out, err := e.Transform(context.Background(), script(`function transform() { return null; }`), json.RawMessage(`{}`), nil)
	if err != nil || !out.Skip {
		t.Fatalf("call once the VM came back: %v, %v", out, err)
	}
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestScriptThatSubvertsItsWrapperStillGetsItsOutputChecked(t *testing.T) {
	e := newEngine(t, Config{})
	for name, src := range map[string]string{
		"empty JSON":       `JSON.stringify = function () { return ""; }; function transform() { return {body: 1}; }`,
		"bad JSON":         `JSON.stringify = function () { return "{nope"; }; function transform() { return {body: 1}; }`,
		"not a string":     `JSON.stringify = function () { return 5; }; function transform() { return {body: 1}; }`,
		"replaced wrapper": `function transform() { globalThis.__intake_call = function () { return "{}"; }; return {headers: {}}; }`,
	} {
		_, err := e.Transform(context.Background(), script(src), json.RawMessage(`{}`), nil)
		var se *ScriptError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a script error", name, err)
		}
	}
}

func TestEndlessRecursionIsStoppedAndItsVMDiscarded(t *testing.T) {
	// Recursing to the stack's limit takes seconds under the race detector
	// on a loaded machine: the time limit is not what this test is about.
	e := newEngine(t, Config{ScriptTimeout: 2 * time.Minute})
	_, err := e.Transform(context.Background(), script(`function transform(e) { return transform(e); }`), json.RawMessage(`{}`), nil)
	if se := scriptErr(t, err, ReasonInternal); !strings.Contains(se.Message, "stack overflow") {
		t.Errorf("error %q, want the stack overflow", se)
	}
	if e.VMs() != 0 {
		t.Errorf("%d VMs alive after a stack overflow, want it closed", e.VMs())
	}
}

func TestCancelledCallerStopsTheScriptEvenBeforeItStarts(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Transform(ctx, script(counter), json.RawMessage(`{"spin": true}`), nil); err != context.Canceled {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
}

// busyHosts counts the script hosts running a call or starting.
func busyHosts(e *Engine) int {
	e.hosts.mu.Lock()
	defer e.hosts.mu.Unlock()
	return e.hosts.live - len(e.hosts.idle)
}

// hostPIDs lists the process ids of the script hosts alive.
func hostPIDs(e *Engine) []int {
	e.hosts.mu.Lock()
	defer e.hosts.mu.Unlock()
	var pids []int
	for h := range e.hosts.all {
		pids = append(pids, h.pid)
	}
	return pids
}

// reaped is nil when process pid no longer exists: not running, and not a
// zombie waiting to be reaped either.
func reaped(pid int) error {
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		return fmt.Errorf("process %d still exists (kill 0: %v)", pid, err)
	}
	return nil
}

// nativeLoop spends seconds inside one builtin, where QuickJS never looks
// at its interrupt flag: only killing its process stops it.
const nativeLoop = `var a = []; a.length = 1e8; a.lastIndexOf(1);`

// within runs f and fails the test if f has not returned after d, so that
// a limit that no longer holds fails fast rather than hanging the package.
func within[T any](t *testing.T, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
		panic("unreachable")
	}
}

// warmHost starts e's one script host with a call and returns its pid; an
// engine of one host runs its next call there.
func warmHost(t *testing.T, e *Engine) int {
	t.Helper()
	if _, err := e.Transform(context.Background(), script(`function transform() { return null; }`), json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	pids := hostPIDs(e)
	if len(pids) != 1 {
		t.Fatalf("%d hosts after one call, want 1", len(pids))
	}
	return pids[0]
}

func TestANativeBuiltinIsStoppedAtTheTimeLimitAndItsHostKilled(t *testing.T) {
	const limit = 100 * time.Millisecond
	e := newEngine(t, Config{ScriptTimeout: limit, Hosts: 1})
	pid := warmHost(t, e)
	start := time.Now()
	err := within(t, 30*time.Second, func() error {
		_, err := e.Transform(context.Background(), script("function transform(e, c) { "+nativeLoop+" return null; }"), json.RawMessage(`{}`), nil)
		return err
	})
	took := time.Since(start)
	if se := scriptErr(t, err, ReasonTimeout); se.Error() != "transform_error: the script ran over its time limit of 100ms" {
		t.Errorf("error %q", se)
	}
	if took > 10*limit {
		t.Errorf("the call took %v, over ten times its limit of %v", took, limit)
	}
	if err := reaped(pid); err != nil {
		t.Errorf("the host that ran it: %v", err)
	}
	if got := count(t, e, script(counter)); got != "1" {
		t.Fatalf("the call after the kill counted %s", got)
	}
}

func TestANativeBuiltinAtAScriptsTopLevelIsStoppedAsItLoads(t *testing.T) {
	const limit = 100 * time.Millisecond
	e := newEngine(t, Config{ScriptTimeout: limit, Hosts: 1})
	src := nativeLoop + " function transform(e, c) { return null; }"

	pid := warmHost(t, e)
	start := time.Now()
	err := within(t, 30*time.Second, func() error { return e.Check(context.Background(), "", KindTransform, src) })
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(err.Error(), "transform fails while loading: the script ran over its time limit of 100ms") {
		t.Errorf("check: %v, want EINVALID naming the time limit", err)
	}
	if took := time.Since(start); took > 10*limit {
		t.Errorf("the check took %v, over ten times the limit of %v", took, limit)
	}
	if err := reaped(pid); err != nil {
		t.Errorf("the host that checked it: %v", err)
	}

	// A script saved before it turned hostile fails its call the same way.
	pid = warmHost(t, e)
	start = time.Now()
	err = within(t, 30*time.Second, func() error {
		_, err := e.Transform(context.Background(), script(src), json.RawMessage(`{}`), nil)
		return err
	})
	scriptErr(t, err, ReasonTimeout)
	if took := time.Since(start); took > 10*limit {
		t.Errorf("the call took %v, over ten times the limit of %v", took, limit)
	}
	if err := reaped(pid); err != nil {
		t.Errorf("the host that called it: %v", err)
	}
}

func TestADryRunWhoseCallerLeftKillsItsHost(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: time.Hour, Hosts: 1})
	pid := warmHost(t, e)
	calling := make(chan struct{})
	grants := 0
	e.hosts.granted = func(scope string) {
		// The dry run's second grant is its call, after its check.
		if scope == "org-dry" {
			if grants++; grants == 2 {
				close(calling)
			}
		}
	}
	ctx, leave := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Test(ctx, KindTransform, "function transform(e, c) { "+nativeLoop+" return null; }",
			TestInput{Scope: "org-dry", EventJSON: json.RawMessage(`{}`)})
		done <- err
	}()
	select {
	case <-calling:
	case <-time.After(30 * time.Second):
		t.Fatal("the dry run's call never got a host")
	}
	leave()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("dry run whose caller left: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the dry run went on for 5s after its caller left")
	}
	if err := reaped(pid); err != nil {
		t.Errorf("the host of the dry run: %v", err)
	}
}

func TestScriptHostsLimitTheirAddressSpace(t *testing.T) {
	if raceEnabled {
		t.Skip("a host built with the race detector runs without an address-space limit")
	}
	e := newEngine(t, Config{ScriptMemory: 8 << 20, HostVMs: 3})
	pid := warmHost(t, e)
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Skip("no /proc:", err)
	}
	var limit int64
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "Max address space"); ok {
			limit, err = strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatalf("address space limit %q: %v", rest, err)
			}
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var mapped int64
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			mapped = kb << 10
		}
	}
	extra := hostAddressSpace(e.cfg)
	if limit < extra || limit > mapped+extra {
		t.Fatalf("the host may map %d bytes, has %d mapped: want at most what it mapped as it started plus %d", limit, mapped, extra)
	}
}

func TestAMemoryBombLeavesTheEngineProcessUnharmed(t *testing.T) {
	e := newEngine(t, Config{ScriptMemory: 64 << 20, ScriptTimeout: time.Minute, HostVMs: 1})
	warmHost(t, e)
	runtime.GC()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skip("cannot reset the peak resident size:", err)
	}
	before := procStatus(t, "VmRSS")
	err := within(t, 5*time.Minute, func() error {
		_, err := e.Transform(context.Background(), script(counter), json.RawMessage(`{"hoard": true}`), nil)
		return err
	})
	scriptErr(t, err, ReasonMemory)
	if grew := procStatus(t, "VmHWM") - before; grew > 24<<20 {
		t.Errorf("the engine's process grew by %d MiB at its peak while a script filled 64 MiB", grew>>20)
	}
	if got := count(t, e, script(counter)); got != "1" {
		t.Fatalf("the call after the bomb counted %s", got)
	}
}

// procStatus reads a size in bytes from /proc/self/status.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

func TestAnInterpretBodyLargerThanTheScriptCouldHoldIsRefusedBeforeItIsBuilt(t *testing.T) {
	e := newEngine(t, Config{ScriptMemory: 4 << 20})
	src := `function interpret(request) { return [{type: "seen", data: request.body.length}]; }`
	body := make([]byte, 24<<20)
	for i := range body {
		body[i] = 'x'
	}
	req := Request{Method: "POST", Body: string(body)}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocated := ms.TotalAlloc
	_, err := e.Interpret(context.Background(), script(src), req)
	runtime.ReadMemStats(&ms)
	if se := scriptErr(t, err, ReasonInput); se.Error() != "interpret_error: body too large" {
		t.Errorf("error %q", se)
	}
	if n := ms.TotalAlloc - allocated; n > 1<<20 {
		t.Errorf("%d MiB allocated to refuse a 24 MiB body", n>>20)
	}
	if n := len(hostPIDs(e)); n != 0 {
		t.Errorf("%d script hosts started for a refused body", n)
	}

	// A body the script can hold is given to it.
	req.Body = req.Body[:256<<10]
	evs, err := e.Interpret(context.Background(), script(src), req)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != "262144" {
		t.Fatalf("a 256 KiB body: %v, %v", evs, err)
	}
}

func TestAnInterpretScriptNamingMoreEventsThanAMessageMakesIsRefused(t *testing.T) {
	e := newEngine(t, Config{})
	// Commas and brackets inside the events are not counted as events.
	src := `function interpret(request) {
		var n = request.json.n, out = [];
		for (var i = 0; i < n; i++) out.push(n < 2000 ? {type: "a,b]", data: [i, {"x,": "[,{"}]} : {type: "x"});
		return out;
	}`
	for _, tc := range []struct {
		n    int
		fail bool
	}{{1000, false}, {1001, true}, {50000, true}, {0, false}} {
		evs, err := e.Interpret(context.Background(), script(src), Request{Method: "POST", Body: fmt.Sprintf(`{"n": %d}`, tc.n)})
		if !tc.fail {
			if err != nil || len(evs) != tc.n {
				t.Fatalf("%d events: %d back, %v", tc.n, len(evs), err)
			}
			continue
		}
		se := scriptErr(t, err, ReasonTooManyEvents)
		if se.Message != "the script returned more than 1000 events" {
			t.Errorf("%d events: %q", tc.n, se)
		}
	}
}

func TestOneOrgsQueuedSlowScriptsDoNotWaitInFrontOfAnothersCall(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: time.Hour, Hosts: 2})
	var order []string // under e.hosts.mu
	e.hosts.granted = func(scope string) { order = append(order, scope) }
	served := func() []string {
		e.hosts.mu.Lock()
		defer e.hosts.mu.Unlock()
		return append([]string(nil), order...)
	}
	waiting := func() int {
		e.hosts.mu.Lock()
		defer e.hosts.mu.Unlock()
		return e.hosts.waiting
	}
	slow := Script{Scope: "org-b", Source: `function transform() { for (;;) {} }`}
	var cancels []context.CancelFunc
	results := make(chan error, 6)
	call := func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		go func() {
			_, err := e.Transform(ctx, slow, json.RawMessage(`{}`), nil)
			results <- err
		}()
	}
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	call()
	call()
	waitFor(t, func() bool { return len(served()) == 2 })
	for range 4 {
		call()
	}
	waitFor(t, func() bool { return waiting() == 4 })
	a := make(chan error, 1)
	go func() {
		_, err := e.Transform(context.Background(), Script{Scope: "org-a", Source: `function transform() { return null; }`}, json.RawMessage(`{}`), nil)
		a <- err
	}()
	waitFor(t, func() bool { return waiting() == 5 })

	cancels[0]() // one of org B's hosts is killed: the next host is org A's
	select {
	case err := <-a:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("org A's call was not served; hosts went to %v", served())
	}
	if got := served(); strings.Join(got[:3], " ") != "org-b org-b org-a" {
		t.Fatalf("hosts went to %v, want org A's call served before org B's queued ones", got)
	}
}

func TestAHostWithEveryVMFullStillTakesTheLargestInput(t *testing.T) {
	const memory = 16 << 20
	e := newEngine(t, Config{ScriptMemory: memory, HostVMs: 4})
	for i := range 4 {
		src := fmt.Sprintf(`var keep = [];
			try { for (;;) keep.push(new Array(10000).fill(%d)); } catch (e) { keep.length -= 3; }
			function transform() { return {body: keep.length}; }`, i)
		if _, err := e.Transform(context.Background(), script(src), json.RawMessage(`{}`), nil); err != nil {
			t.Fatalf("VM %d: %v", i, err)
		}
	}
	// The largest bodies let in: escaped six times over, or as they are.
	echo := script(`function interpret(r) { return [{type: "x", data: r.body.length}]; }`)
	for _, body := range []string{strings.Repeat("\x01", memory/12-200), strings.Repeat("x", memory/8-200)} {
		_, err := e.Interpret(context.Background(), echo, Request{Method: "POST", Body: body})
		var se *ScriptError
		if err != nil && (!errors.As(err, &se) || se.Reason == ReasonInternal) {
			t.Fatalf("a body of %d bytes in a host with every VM full: %v", len(body), err)
		}
	}
}

// TestAnOrgRunningScriptsToTheirLimitsLeavesAHostForAnother: org B's
// endless scripts take three of four hosts and its further calls wait;
// org A's call is served at once by the fourth, while all of B's still run.
func TestAnOrgRunningScriptsToTheirLimitsLeavesAHostForAnother(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: time.Hour, Hosts: 4})
	running := func(scope string) int {
		e.hosts.mu.Lock()
		defer e.hosts.mu.Unlock()
		return e.hosts.running[scope]
	}
	waiting := func() int {
		e.hosts.mu.Lock()
		defer e.hosts.mu.Unlock()
		return e.hosts.waiting
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := Script{Scope: "org-b", Source: `function transform() { for (;;) {} }`}
	for range 6 {
		go e.Transform(ctx, slow, json.RawMessage(`{}`), nil)
	}
	waitFor(t, func() bool { return running("org-b") == 3 && waiting() == 3 })
	a := make(chan error, 1)
	go func() {
		_, err := e.Transform(context.Background(), Script{Scope: "org-a", Source: `function transform() { return null; }`}, json.RawMessage(`{}`), nil)
		a <- err
	}()
	select {
	case err := <-a:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a hang guard: B's calls never end by themselves
		t.Fatal("org A's call was not served while org B held three hosts")
	}
	if n := running("org-b"); n != 3 {
		t.Fatalf("org B ran %d calls while A's was served, want its share of 3", n)
	}
}

// TestAScriptIsCheckedInTheHostShareOfTheOrgSavingIt: saving a script
// loads it in a host of the saving org's share, so one org's saves of
// scripts that run to their limits wait in its own queue.
func TestAScriptIsCheckedInTheHostShareOfTheOrgSavingIt(t *testing.T) {
	e := newEngine(t, Config{})
	var scopes []string // under e.hosts.mu
	e.hosts.granted = func(scope string) { scopes = append(scopes, scope) }
	if err := e.Check(context.Background(), "org-a", KindTransform, `function transform() { return null; }`); err != nil {
		t.Fatal(err)
	}
	e.hosts.mu.Lock()
	defer e.hosts.mu.Unlock()
	if len(scopes) != 1 || scopes[0] != "org-a" {
		t.Fatalf("the check was served in %q, want org-a's share", scopes)
	}
}
