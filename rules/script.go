package rules

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"modernc.org/quickjs"

	"github.com/intakehq/intake"
)

// Script is one JavaScript rule as its owner saved it.
//
// What a script shares: its VMs are pooled per (Scope, Source), and a VM
// serves one call at a time, so global state a call leaves behind (a
// top-level variable it changes) may be seen by a later call of the same
// script in the same scope, and never by any other script or scope. Scripts
// must not rely on it either way: a VM is dropped whenever it hits a limit
// or the pool needs room. A fresh VM per call would cost some twenty times
// the call itself (BenchmarkTransformFreshVM against BenchmarkTransform).
type Script struct {
	// Scope is whose script this is, an organisation's id: two organisations
	// that save the same source never share a VM.
	Scope  string
	Source string
}

// Reasons a script call fails, for metrics and for the caller's decision.
const (
	ReasonThrow    = "throw"    // the script threw
	ReasonTimeout  = "timeout"  // it ran over its time limit
	ReasonMemory   = "memory"   // it ran out of its memory limit
	ReasonOutput   = "output"   // it returned more than the output limit
	ReasonResult   = "result"   // it returned something of the wrong shape
	ReasonInternal = "internal" // the engine failed (stack overflow, …)
)

// ScriptError is a failed call of a script: what a delivery or a message
// records, as "transform_error: <message>" or "interpret_error: <message>".
type ScriptError struct {
	Kind    Kind
	Reason  string
	Message string
}

func (e *ScriptError) Error() string { return string(e.Kind) + "_error: " + e.Message }

// entry is the function each kind of script must define.
var entry = map[Kind]string{
	KindTransform: "function transform(event, context)",
	KindInterpret: "function interpret(request)",
}

// Results of the call wrapper that are not the output JSON.
const (
	resultPromise   = -1
	resultUndefined = -2
)

// runner wraps the script's entry function: it parses the arguments from
// one JSON string and returns the result as one JSON string, or its length
// when that is over the limit, so an oversized result never crosses into
// Go (and an oversized string body is not even copied into JSON). Go checks what comes back all the same: the script could have
// replaced JSON or this wrapper.
const runner = `(function (f, parse, stringify, withJSON) {
	if (typeof f !== "function") return false;
	globalThis.__intake_call = function (input, max) {
		var args = parse(input);
		if (withJSON) {
			try { args[0].json = parse(args[0].body); } catch (e) { args[0].json = null; }
		}
		var r = f.apply(undefined, args);
		if (r !== null && typeof r === "object" && typeof r.then === "function") return %d;
		if (r !== null && typeof r === "object" && typeof r.body === "string" && r.body.length > max) return r.body.length;
		var s = stringify(r);
		if (typeof s !== "string") return %d;
		return s.length > max ? s.length : s;
	};
	return true;
})(typeof %[3]s === "undefined" ? undefined : %[3]s, JSON.parse, JSON.stringify, %[4]t)`

func runnerFor(kind Kind) string {
	name := "transform"
	if kind == KindInterpret {
		name = "interpret"
	}
	return fmt.Sprintf(runner, resultPromise, resultUndefined, name, kind == KindInterpret)
}

// newVM makes a VM bounded by the engine's limits with source loaded and
// its entry function wrapped. A fault in source is an EINVALID error.
func (e *Engine) newVM(kind Kind, source string) (*pooledVM, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("rules: new VM: %w", err)
	}
	vm.SetMemoryLimit(uintptr(e.cfg.ScriptMemory))
	vm.SetCanBlock(false)
	if err := vm.SetEvalTimeout(e.cfg.ScriptTimeout); err != nil {
		vm.Close()
		return nil, fmt.Errorf("rules: VM timeout: %w", err)
	}
	if _, err := vm.Eval(source, quickjs.EvalGlobal); err != nil {
		vm.Close()
		return nil, e.loadError(kind, err)
	}
	ok, err := vm.Eval(runnerFor(kind), quickjs.EvalGlobal)
	if err != nil {
		vm.Close()
		return nil, e.loadError(kind, err)
	}
	if ok != true {
		vm.Close()
		return nil, intake.Errorf(intake.EINVALID, "%s: the script does not define %s", kind, entry[kind])
	}
	call, err := vm.EvalValue("__intake_call", quickjs.EvalGlobal)
	if err != nil {
		vm.Close()
		return nil, fmt.Errorf("rules: wrapper: %w", err)
	}
	return &pooledVM{js: vm, call: call}, nil
}

// checkScript loads source once, as a call would, in a VM that counts
// against the cap like any other and is closed at once.
func (e *Engine) checkScript(ctx context.Context, kind Kind, source string) error {
	key := version("check", intake.NewID())
	vm, err := e.vms.get(ctx, key, func() (*pooledVM, error) { return e.newVM(kind, source) })
	if err != nil {
		return err
	}
	e.vms.put(vm, false)
	return nil
}

func (e *Engine) loadError(kind Kind, err error) error {
	var js *quickjs.Error
	if errors.As(err, &js) && js.LineNumber > 0 {
		return intake.Errorf(intake.EINVALID, "%s does not compile: line %d, column %d: %s", kind, js.LineNumber, js.ColumnNumber, js.Error())
	}
	se := e.scriptError(kind, err)
	return intake.Errorf(intake.EINVALID, "%s fails while loading: %s", kind, se.Message)
}

// maxMessage bounds what of a thrown message is kept: it is stored on every
// delivery the script fails.
const maxMessage = 1 << 10

// frame finds the first position of the script in a stack trace.
var frame = regexp.MustCompile(`<eval>:(\d+):(\d+)`)

// scriptError names what went wrong in a call.
func (e *Engine) scriptError(kind Kind, err error) *ScriptError {
	var js *quickjs.Error
	if !errors.As(err, &js) {
		return &ScriptError{Kind: kind, Reason: ReasonInternal, Message: err.Error()}
	}
	if js.Name == "InternalError" {
		switch js.Message {
		case "interrupted":
			return &ScriptError{Kind: kind, Reason: ReasonTimeout, Message: "the script ran over its time limit of " + e.cfg.ScriptTimeout.String()}
		case "out of memory":
			return &ScriptError{Kind: kind, Reason: ReasonMemory, Message: "the script ran out of its memory limit of " + bytesString(e.cfg.ScriptMemory)}
		}
		return &ScriptError{Kind: kind, Reason: ReasonInternal, Message: js.Error()}
	}
	msg := js.Error()
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	if m := frame.FindStringSubmatch(js.Stack); m != nil {
		msg += " (line " + m[1] + ", column " + m[2] + ")"
	}
	return &ScriptError{Kind: kind, Reason: ReasonThrow, Message: msg}
}

func bytesString(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// call runs the script's entry function on the JSON array args in a pooled
// VM and returns the result JSON. A VM that failed in any way but a throw
// of the script's own is closed, never reused; so is every VM of a call
// that is not to reuse one (a dry run).
func (e *Engine) call(ctx context.Context, kind Kind, s Script, args string, reuse bool) ([]byte, error) {
	key := version(string(kind), s.Scope, s.Source)
	if !reuse {
		key = version("once", intake.NewID())
	}
	vm, err := e.vms.get(ctx, key, func() (*pooledVM, error) { return e.newVM(kind, s.Source) })
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		e.vms.put(vm, reuse)
		return nil, err
	}
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { interruptUntil(vm.js, done) })
	v, err := vm.call.Call(quickjs.UndefinedValue, args, e.cfg.MaxOutput)
	close(done)
	interrupted := !stop()
	if interrupted || ctx.Err() != nil {
		e.vms.put(vm, false)
		return nil, ctx.Err()
	}
	if err != nil {
		se := e.scriptError(kind, err)
		e.vms.put(vm, reuse && se.Reason == ReasonThrow)
		return nil, se
	}
	e.vms.put(vm, reuse)
	switch r := v.(type) {
	case string:
		if len(r) > e.cfg.MaxOutput {
			return nil, e.outputError(kind, len(r))
		}
		return []byte(r), nil
	case int:
		switch r {
		case resultPromise:
			return nil, &ScriptError{Kind: kind, Reason: ReasonResult, Message: "the script returned a Promise; async functions are not supported"}
		case resultUndefined:
			return nil, &ScriptError{Kind: kind, Reason: ReasonResult, Message: "the script returned undefined (a transform returns null to skip)"}
		}
		return nil, e.outputError(kind, r)
	case float64:
		return nil, e.outputError(kind, int(r))
	}
	return nil, &ScriptError{Kind: kind, Reason: ReasonResult, Message: fmt.Sprintf("the script's wrapper returned %T", v)}
}

// interruptUntil interrupts js until done is closed: the engine clears an
// interrupt that arrives before the call has entered JavaScript, so one
// Interrupt could be lost.
func interruptUntil(js *quickjs.VM, done <-chan struct{}) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		js.Interrupt()
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

func (e *Engine) outputError(kind Kind, n int) error {
	return &ScriptError{Kind: kind, Reason: ReasonOutput,
		Message: fmt.Sprintf("the output is at least %d bytes, over the limit of %d bytes, so it is refused whole", n, e.cfg.MaxOutput)}
}
