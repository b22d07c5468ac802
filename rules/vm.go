package rules

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"modernc.org/quickjs"

	"github.com/intakehq/intake"
)

// vmRunner runs scripts in VMs of this process, kept per script version: it
// is what a script host does with each call it is sent. Nothing but a
// script host should call it, since a native builtin can run on past every
// limit set here; only killing the process stops it.
type vmRunner struct {
	cfg Config
	vms *pool
}

func newVMRunner(cfg Config) *vmRunner {
	return &vmRunner{cfg: cfg, vms: newPool(cfg.HostVMs)}
}

// newVM makes a VM bounded by the runner's limits with source loaded and
// its entry function wrapped. It returns the engine's error as is; the
// caller says whether it is a load or a call that failed.
func (r *vmRunner) newVM(kind Kind, source string) (*pooledVM, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("rules: new VM: %w", err)
	}
	vm.SetMemoryLimit(uintptr(r.cfg.ScriptMemory))
	vm.SetCanBlock(false)
	if err := vm.SetEvalTimeout(r.cfg.ScriptTimeout); err != nil {
		vm.Close()
		return nil, fmt.Errorf("rules: VM timeout: %w", err)
	}
	if _, err := vm.Eval(source, quickjs.EvalGlobal); err != nil {
		vm.Close()
		return nil, err
	}
	ok, err := vm.Eval(runnerFor(kind), quickjs.EvalGlobal)
	if err != nil {
		vm.Close()
		return nil, err
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

// check loads source once, as a call would, in a VM closed at once. A
// fault in source is an EINVALID error.
func (r *vmRunner) check(kind Kind, source string) error {
	vm, err := r.newVM(kind, source)
	if err != nil {
		return r.loadError(kind, err)
	}
	vm.close()
	return nil
}

func (r *vmRunner) loadError(kind Kind, err error) error {
	var js *quickjs.Error
	if errors.As(err, &js) && js.LineNumber > 0 {
		return intake.Errorf(intake.EINVALID, "%s does not compile: line %d, column %d: %s", kind, js.LineNumber, js.ColumnNumber, js.Error())
	}
	if intake.ErrorCode(err) == intake.EINVALID {
		return err
	}
	se := scriptError(r.cfg, kind, err)
	return intake.Errorf(intake.EINVALID, "%s fails while loading: %s", kind, se.Message)
}

// maxMessage bounds what of a thrown message is kept: it is stored on every
// delivery the script fails.
const maxMessage = 1 << 10

// frame finds the first position of the script in a stack trace.
var frame = regexp.MustCompile(`<eval>:(\d+):(\d+)`)

// scriptError names what went wrong in a call.
func scriptError(cfg Config, kind Kind, err error) *ScriptError {
	var js *quickjs.Error
	if !errors.As(err, &js) {
		return &ScriptError{Kind: kind, Reason: ReasonInternal, Message: err.Error()}
	}
	if js.Name == "InternalError" {
		switch js.Message {
		case "interrupted":
			return timeoutError(cfg, kind)
		case "out of memory":
			return memoryError(cfg, kind)
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

func timeoutError(cfg Config, kind Kind) *ScriptError {
	return &ScriptError{Kind: kind, Reason: ReasonTimeout, Message: "the script ran over its time limit of " + cfg.ScriptTimeout.String()}
}

func memoryError(cfg Config, kind Kind) *ScriptError {
	return &ScriptError{Kind: kind, Reason: ReasonMemory, Message: "the script ran out of its memory limit of " + bytesString(cfg.ScriptMemory)}
}

func bytesString(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// call runs the script's entry function on the JSON array args in a VM of
// version key and returns the result JSON, and whether the VM was kept. A
// VM that failed in any way but a throw of the script's own is closed,
// never reused; so is every VM of a call that is not to reuse one (a dry
// run). A script that fails while loading is a *ScriptError here, as its
// call would have been: the caller saved it long ago.
func (r *vmRunner) call(kind Kind, key [sha256.Size]byte, source, args string, reuse bool) ([]byte, bool, error) {
	if !reuse {
		key = version("once", intake.NewID())
	}
	vm, err := r.vms.get(context.Background(), key, func() (*pooledVM, error) { return r.newVM(kind, source) })
	if err != nil {
		se := scriptError(r.cfg, kind, err)
		se.Message = intake.ErrorMessage(r.loadError(kind, err))
		if se.Reason == ReasonInternal && intake.ErrorCode(err) == intake.EINVALID {
			se.Reason = ReasonResult
		}
		return nil, false, se
	}
	v, err := vm.call.Call(quickjs.UndefinedValue, args, r.cfg.MaxOutput)
	if err != nil {
		se := scriptError(r.cfg, kind, err)
		keep := reuse && se.Reason == ReasonThrow
		r.vms.put(vm, keep)
		return nil, keep, se
	}
	r.vms.put(vm, reuse)
	switch v := v.(type) {
	case string:
		if len(v) > r.cfg.MaxOutput {
			return nil, reuse, outputError(r.cfg, kind, len(v))
		}
		return []byte(v), reuse, nil
	case int:
		switch v {
		case resultPromise:
			return nil, reuse, &ScriptError{Kind: kind, Reason: ReasonResult, Message: "the script returned a Promise; async functions are not supported"}
		case resultUndefined:
			return nil, reuse, &ScriptError{Kind: kind, Reason: ReasonResult, Message: "the script returned undefined (a transform returns null to skip)"}
		}
		return nil, reuse, outputError(r.cfg, kind, v)
	case float64:
		return nil, reuse, outputError(r.cfg, kind, int(v))
	}
	return nil, reuse, &ScriptError{Kind: kind, Reason: ReasonResult, Message: fmt.Sprintf("the script's wrapper returned %T", v)}
}

func outputError(cfg Config, kind Kind, n int) error {
	return &ScriptError{Kind: kind, Reason: ReasonOutput,
		Message: fmt.Sprintf("the output is at least %d bytes, over the limit of %d bytes, so it is refused whole", n, cfg.MaxOutput)}
}

// close frees the runner's VMs.
func (r *vmRunner) close() { r.vms.close() }
