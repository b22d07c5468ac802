// Package rules runs the logic an organisation attaches to its webhooks:
// CEL filters and ordering keys that choose and group events, and JavaScript
// that reshapes a delivery (transform) or reads a provider intake does not
// know (interpret). Every rule is compiled once, cached by version, and run
// bounded in time, memory and output, so a hostile rule costs its owner a
// failed call and nobody else anything.
package rules

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"runtime"
	"time"

	"github.com/intakehq/intake"
)

// Kind names what a rule is for.
type Kind string

// Rule kinds.
const (
	KindFilter    Kind = "filter"    // CEL, returns bool: should this consumer get the event
	KindKey       Kind = "key"       // CEL, returns string: the ordering key of §9
	KindTransform Kind = "transform" // JS transform(event, context) → {body, headers} | null
	KindInterpret Kind = "interpret" // JS interpret(request) → [events]
)

// Defaults of Config.
const (
	DefaultScriptTimeout = 50 * time.Millisecond
	DefaultScriptMemory  = 16 << 20
	DefaultMaxOutput     = 1 << 20
	DefaultHostVMs       = 16
	DefaultMaxPrograms   = 1024
	DefaultCostLimit     = 1_000_000
	DefaultMaxSource     = 64 << 10
)

// Config bounds what rules may cost. Zero fields take the defaults above.
type Config struct {
	ScriptTimeout time.Duration // per JS call, and per CEL evaluation
	ScriptMemory  int           // bytes per JS VM
	MaxOutput     int           // bytes a JS call may return; more is refused, never truncated
	// Hosts caps the script host processes (each runs one JS call at a
	// time); zero is DefaultHosts().
	Hosts int
	// HostVMs caps the VMs a host keeps loaded, idle or busy, so script
	// memory stays under Hosts × HostVMs × ScriptMemory however many
	// scripts exist.
	HostVMs     int
	MaxPrograms int    // compiled CEL programs kept, least recently used dropped first
	CostLimit   uint64 // CEL runtime cost per evaluation
	MaxSource   int    // bytes of a rule's source
}

func (c Config) withDefaults() Config {
	if c.ScriptTimeout <= 0 {
		c.ScriptTimeout = DefaultScriptTimeout
	}
	if c.ScriptMemory <= 0 {
		c.ScriptMemory = DefaultScriptMemory
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.Hosts <= 0 {
		c.Hosts = DefaultHosts()
	}
	if c.HostVMs <= 0 {
		c.HostVMs = DefaultHostVMs
	}
	if c.MaxPrograms <= 0 {
		c.MaxPrograms = DefaultMaxPrograms
	}
	if c.CostLimit == 0 {
		c.CostLimit = DefaultCostLimit
	}
	if c.MaxSource <= 0 {
		c.MaxSource = DefaultMaxSource
	}
	return c
}

// DefaultHosts is the script hosts of a server: two per CPU, at least four,
// so a host killed mid-call or one slow script leaves others running.
func DefaultHosts() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// Engine compiles, caches and runs rules; one per server, safe for
// concurrent use. CEL runs in this process, bounded by its cost limit; JS
// runs in script hosts, child processes killed when a call outlives its
// limit (hosts.go).
type Engine struct {
	cfg   Config
	clock intake.Clock
	cel   *celRunner
	hosts *hostPool
}

// New returns an engine bounded by cfg, timing dry runs with clock.
func New(cfg Config, clock intake.Clock) (*Engine, error) {
	cfg = cfg.withDefaults()
	if clock == nil {
		clock = intake.SystemClock{}
	}
	c, err := newCELRunner(cfg)
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, clock: clock, cel: c, hosts: newHostPool(cfg)}, nil
}

// Close stops every idle script host; hosts in use are stopped when their
// call returns.
func (e *Engine) Close() { e.hosts.close() }

// VMs reports how many JS VMs are loaded in the script hosts, never more
// than Config.Hosts × Config.HostVMs.
func (e *Engine) VMs() int { return e.hosts.vms() }

// Check compiles a rule as scope (the org saving it) would save it: nil,
// or an EINVALID error whose message names the position of the fault. A
// script is loaded in a host of scope's share, as its calls will be.
func (e *Engine) Check(ctx context.Context, scope string, kind Kind, source string) error {
	return e.check(ctx, scope, kind, source)
}

// check compiles a rule; a script is loaded in a host of scope's share.
func (e *Engine) check(ctx context.Context, scope string, kind Kind, source string) error {
	if len(source) > e.cfg.MaxSource {
		return intake.Errorf(intake.EINVALID, "%s: source is %d bytes, at most %d", kind, len(source), e.cfg.MaxSource)
	}
	switch kind {
	case KindFilter, KindKey:
		_, err := e.cel.program(kind, source)
		return err
	case KindTransform, KindInterpret:
		_, err := e.hosts.run(ctx, scope, &hostRequest{op: opCheck, kind: kind, key: version("check"), source: source})
		return err
	}
	return intake.Errorf(intake.EINVALID, "rule kind %q: want filter, key, transform or interpret", kind)
}

// TestInput is what a dry run feeds a rule: the event (as JSON or decoded,
// either one) and Headers/Query for filters, keys and transforms, Request
// for interpret.
type TestInput struct {
	Input
	// Scope is whose dry run this is, an organisation's id: its script
	// waits for a host in that organisation's queue.
	Scope     string
	EventJSON json.RawMessage // the envelope as JSON
	Context   any             // the transform's context argument
	Request   Request
}

// TestResult is the outcome of a dry run.
type TestResult struct {
	Result   any           `json:"result"` // bool, key string, *Output, or []Event
	Output   string        `json:"output,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"-"` // the API shows it as duration_ms
}

// Test runs source once on in, as the data plane would, and writes nothing:
// a script runs in a VM of its own, closed after the call, so a dry run
// shares no state with any other. A rule that does not compile is an
// EINVALID error; a rule that compiles but fails on in is a TestResult
// with Error set.
func (e *Engine) Test(ctx context.Context, kind Kind, source string, in TestInput) (TestResult, error) {
	if err := e.check(ctx, in.Scope, kind, source); err != nil {
		return TestResult{}, err
	}
	if len(in.EventJSON) == 0 && in.Event != nil {
		raw, err := json.Marshal(in.Event)
		if err != nil {
			return TestResult{}, intake.Errorf(intake.EINVALID, "event: %v", err)
		}
		in.EventJSON = raw
	}
	if in.Event == nil && len(in.EventJSON) > 0 && (kind == KindFilter || kind == KindKey) {
		ev, err := DecodeEvent(in.EventJSON)
		if err != nil {
			return TestResult{}, err
		}
		in.Event = ev
	}
	start := e.clock.Now()
	var res TestResult
	var err error
	switch kind {
	case KindFilter:
		var ok bool
		ok, err = e.Filter(ctx, source, in.Input)
		res.Result = ok
	case KindKey:
		var key string
		key, err = e.Key(ctx, source, in.Input)
		res.Result = key
	case KindTransform:
		var out *Output
		out, err = e.transform(ctx, Script{Scope: in.Scope, Source: source}, in.EventJSON, in.Context, false)
		if out != nil {
			res.Result, res.Output = out, string(out.Body)
		}
	case KindInterpret:
		var evs []Event
		evs, err = e.interpret(ctx, Script{Scope: in.Scope, Source: source}, in.Request, false)
		res.Result = evs
	}
	res.Duration = e.clock.Now().Sub(start)
	if ctx.Err() != nil {
		return TestResult{}, ctx.Err()
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res, nil
}

// maxInput bounds the bytes a script is given: JSON arguments take some
// eight times their size in the VM (the argument string, the request body
// it holds, the body parsed), so an input above an eighth of the VM's
// memory could not be held anyway.
func (e *Engine) maxInput() int { return e.cfg.ScriptMemory / 8 }

// call runs the script's entry function on the JSON array args in a host
// and returns the result JSON; reuse is false for a dry run, whose VM is
// closed after the call.
func (e *Engine) call(ctx context.Context, kind Kind, s Script, args string, reuse bool) ([]byte, error) {
	return e.hosts.run(ctx, s.Scope, &hostRequest{op: opCall, kind: kind, key: version(string(kind), s.Scope, s.Source),
		source: s.Source, args: args, reuse: reuse})
}

// version names one rule's source for the caches: the same source under
// another kind or scope is another version.
func version(parts ...string) [sha256.Size]byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(p))))
		h.Write([]byte(p))
	}
	var v [sha256.Size]byte
	h.Sum(v[:0])
	return v
}
