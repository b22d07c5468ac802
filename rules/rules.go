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
	DefaultMaxVMs        = 64
	DefaultMaxPrograms   = 1024
	DefaultCostLimit     = 1_000_000
	DefaultMaxSource     = 64 << 10
)

// Config bounds what rules may cost. Zero fields take the defaults above.
type Config struct {
	ScriptTimeout time.Duration // per JS call, and per CEL evaluation
	ScriptMemory  int           // bytes per JS VM
	MaxOutput     int           // bytes a JS call may return; more is refused, never truncated
	// MaxVMs caps the JS VMs alive at once across every script, idle or busy,
	// so memory stays under MaxVMs × ScriptMemory however many scripts exist.
	MaxVMs      int
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
	if c.MaxVMs <= 0 {
		c.MaxVMs = DefaultMaxVMs
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

// Engine compiles, caches and runs rules; one per server, safe for
// concurrent use.
type Engine struct {
	cfg   Config
	clock intake.Clock
	cel   *celRunner
	vms   *pool
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
	return &Engine{cfg: cfg, clock: clock, cel: c, vms: newPool(cfg.MaxVMs)}, nil
}

// Close frees every idle VM; VMs in use are freed when their call returns.
func (e *Engine) Close() { e.vms.close() }

// VMs reports how many JS VMs are alive (idle or busy), never more than
// Config.MaxVMs.
func (e *Engine) VMs() int { return e.vms.size() }

// Check compiles a rule as it would be saved: nil, or an EINVALID error
// whose message names the position of the fault.
func (e *Engine) Check(ctx context.Context, kind Kind, source string) error {
	if len(source) > e.cfg.MaxSource {
		return intake.Errorf(intake.EINVALID, "%s: source is %d bytes, at most %d", kind, len(source), e.cfg.MaxSource)
	}
	switch kind {
	case KindFilter, KindKey:
		_, err := e.cel.program(kind, source)
		return err
	case KindTransform, KindInterpret:
		return e.checkScript(ctx, kind, source)
	}
	return intake.Errorf(intake.EINVALID, "rule kind %q: want filter, key, transform or interpret", kind)
}

// TestInput is what a dry run feeds a rule: the event (as JSON or decoded,
// either one) and Headers/Query for filters, keys and transforms, Request
// for interpret.
type TestInput struct {
	Input
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
	if err := e.Check(ctx, kind, source); err != nil {
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
		out, err = e.transform(ctx, Script{Source: source}, in.EventJSON, in.Context, false)
		if out != nil {
			res.Result, res.Output = out, string(out.Body)
		}
	case KindInterpret:
		var evs []Event
		evs, err = e.interpret(ctx, Script{Source: source}, in.Request, false)
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
