package rules

import "fmt"

// Script is one JavaScript rule as its owner saved it.
//
// What a script shares: its VMs are kept per (Scope, Source) in the script
// hosts, and a VM serves one call at a time, so global state a call leaves
// behind (a top-level variable it changes) may be seen by a later call of
// the same script in the same scope, and never by any other script or
// scope. Scripts must not rely on it either way: a VM is dropped whenever it
// hits a limit, its host is killed, or the host needs room. A fresh VM per
// call would cost some twenty times the call itself
// (BenchmarkTransformFreshVM against BenchmarkTransformInProcess).
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
	ReasonInput    = "input"    // its input was larger than it could hold; it did not run
	// ReasonTooManyEvents: an interpret script named more than
	// intake.MaxEventsPerMessage events; the worker records it under the
	// error code of the same name.
	ReasonTooManyEvents = "too_many_events"
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
