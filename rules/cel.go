package rules

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"

	"github.com/intakehq/intake"
)

// Input is what a filter or an ordering key sees of one event.
type Input struct {
	// Event is the envelope a consumer receives, decoded from JSON (see
	// DecodeEvent): numbers are doubles, as in CEL's own JSON mapping.
	Event map[string]any
	// Headers are the original request's headers: lower-case names, first
	// value, credentials already removed by the caller.
	Headers map[string]string
	Query   map[string]string
}

// DecodeEvent decodes one envelope for Input.Event, so a router decodes an
// event once for all of its consumers' filters.
func DecodeEvent(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		return nil, intake.Errorf(intake.EINVALID, "event: %v", err)
	}
	if ev == nil {
		return nil, intake.Errorf(intake.EINVALID, "event: null is not an object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, intake.Errorf(intake.EINVALID, "event: data after the JSON object")
	}
	return ev, nil
}

// Filter reports whether the filter source accepts in. A runtime error or a
// result that is not a bool is an error: the caller records the consumer as
// filtered, with the error. The caller's own context ending is ctx.Err(),
// which is no verdict on the event.
func (e *Engine) Filter(ctx context.Context, source string, in Input) (bool, error) {
	v, err := e.cel.eval(ctx, KindFilter, source, in)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		// Only a result CEL could not type when the filter was saved
		// (a field of event.data) gets here.
		return false, fmt.Errorf("filter returned %s, want bool%s", jsonKind(v), compareHint(KindFilter, valueType(v), source))
	}
	return b, nil
}

// Key returns the ordering key the source gives in.
func (e *Engine) Key(ctx context.Context, source string, in Input) (string, error) {
	v, err := e.cel.eval(ctx, KindKey, source, in)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("ordering key returned %T, want string", v)
	}
	return s, nil
}

// celRunner compiles CEL once per version and keeps the programs in a
// bounded cache.
type celRunner struct {
	env     *cel.Env
	opts    []cel.ProgramOption
	timeout time.Duration

	mu    sync.Mutex
	max   int
	byKey map[[sha256.Size]byte]*list.Element
	lru   list.List // of *celEntry, most recently used first
}

type celEntry struct {
	key  [sha256.Size]byte
	prog cel.Program
}

// interruptEvery is how many comprehension steps run between checks of the
// context, so a cancelled evaluation stops within a bounded amount of work.
const interruptEvery = 100

func newCELRunner(cfg Config) (*celRunner, error) {
	env, err := cel.NewEnv(
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("query", cel.MapType(cel.StringType, cel.StringType)),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		envelopeDecls(), // last: it wraps the provider the options above add types to
	)
	if err != nil {
		return nil, fmt.Errorf("rules: cel environment: %w", err)
	}
	return &celRunner{
		env:     env,
		opts:    []cel.ProgramOption{cel.CostLimit(cfg.CostLimit), cel.InterruptCheckFrequency(interruptEvery)},
		timeout: cfg.ScriptTimeout,
		max:     cfg.MaxPrograms,
		byKey:   map[[sha256.Size]byte]*list.Element{},
	}, nil
}

func (r *celRunner) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Len()
}

// program returns the compiled program of source, compiling it on first use.
func (r *celRunner) program(kind Kind, source string) (cel.Program, error) {
	key := version(string(kind), source)
	r.mu.Lock()
	if el, ok := r.byKey[key]; ok {
		r.lru.MoveToFront(el)
		r.mu.Unlock()
		return el.Value.(*celEntry).prog, nil
	}
	r.mu.Unlock()

	prog, err := r.compile(kind, source)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.byKey[key]; ok {
		return el.Value.(*celEntry).prog, nil
	}
	r.byKey[key] = r.lru.PushFront(&celEntry{key: key, prog: prog})
	for r.lru.Len() > r.max {
		old := r.lru.Back()
		r.lru.Remove(old)
		delete(r.byKey, old.Value.(*celEntry).key)
	}
	return prog, nil
}

func (r *celRunner) compile(kind Kind, source string) (cel.Program, error) {
	if strings.TrimSpace(source) == "" {
		return nil, intake.Errorf(intake.EINVALID, "%s: empty expression", kind)
	}
	ast, iss := r.env.Compile(source)
	if iss.Err() != nil {
		return nil, intake.Errorf(intake.EINVALID, "%s does not compile: %s", kind, describeIssues(iss.Errors(), source))
	}
	want := types.BoolType
	if kind == KindKey {
		want = types.StringType
	}
	// A result CEL cannot type (a field of event.data, whose shape is the
	// provider's) is accepted: it may well be a bool, and one that is not
	// is an error at run time, naming the fix.
	if out := ast.OutputType(); !out.IsExactType(want) && !out.IsExactType(types.DynType) {
		return nil, intake.Errorf(intake.EINVALID, "%s must return a %s, not %s: %s%s", kind, want, typeName(out), shorten(source), compareHint(kind, out, source))
	}
	prog, err := r.env.Program(ast, r.opts...)
	if err != nil {
		return nil, intake.Errorf(intake.EINVALID, "%s: %v", kind, err)
	}
	return prog, nil
}

// typeName is how a rule's result type is named to the person who wrote
// it: the envelope's objects by what they are in it.
func typeName(t *types.Type) string {
	switch t.TypeName() {
	case envelopeType:
		return "an object (the event)"
	case subjectType:
		return "an object (the subject)"
	}
	switch t.Kind() {
	case types.BoolKind, types.BytesKind, types.DoubleKind, types.IntKind, types.StringKind, types.UintKind:
		if t.IsAssignableType(types.NullType) { // wrapper(string): event.replay_of
			return t.TypeName() + " or null"
		}
	}
	return t.String()
}

// compareHint suggests the comparison a filter returning a value lacks.
func compareHint(kind Kind, out *types.Type, source string) string {
	if kind != KindFilter {
		return ""
	}
	expr := shorten(source)
	if len(expr) > 40 || strings.ContainsAny(expr, "&|?!") {
		return "; compare it to a value"
	}
	switch out.Kind() {
	case types.StringKind:
		return fmt.Sprintf(`; compare it, e.g. %s == "value"`, expr)
	case types.IntKind, types.UintKind, types.DoubleKind:
		return fmt.Sprintf("; compare it, e.g. %s > 0", expr)
	case types.ListKind, types.MapKind:
		return fmt.Sprintf("; compare it, e.g. %s.size() > 0", expr)
	case types.StructKind:
		return fmt.Sprintf("; compare it, e.g. %s != null", expr)
	}
	return "; compare it to a value"
}

// valueType is the CEL type of a result decoded from JSON, for compareHint.
func valueType(v any) *types.Type {
	switch v.(type) {
	case string:
		return types.StringType
	case float64, int64, uint64:
		return types.DoubleType
	case []any:
		return types.NewListType(types.DynType)
	case map[string]any:
		return types.NewMapType(types.StringType, types.DynType)
	}
	return types.DynType
}

// shorten is source on one line, cut short when long, to quote it in an
// error.
func shorten(source string) string {
	s := strings.Join(strings.Fields(source), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return s
}

// describeIssues names each compile error by line and column, with the line
// of source and a caret under the fault.
func describeIssues(errs []*cel.Error, source string) string {
	const most = 3
	parts := make([]string, 0, most)
	for i, e := range errs {
		if i == most {
			parts = append(parts, fmt.Sprintf("(and %d more)", len(errs)-most))
			break
		}
		parts = append(parts, describe(e.Location, e.Message, source))
	}
	return strings.Join(parts, "\n")
}

func describe(loc common.Location, msg, source string) string {
	line, col := loc.Line(), loc.Column()
	out := fmt.Sprintf("line %d, column %d: %s", line, col+1, msg)
	if snippet, ok := common.NewTextSource(source).Snippet(line); ok && line > 0 {
		out += "\n | " + snippet + "\n | " + strings.Repeat(".", len([]rune(snippet[:min(col, len(snippet))]))) + "^"
	}
	return out
}

func (r *celRunner) eval(ctx context.Context, kind Kind, source string, in Input) (any, error) {
	prog, err := r.program(kind, source)
	if err != nil {
		return nil, err
	}
	vars := map[string]any{"event": orEmpty(in.Event), "headers": orEmptyStrings(in.Headers), "query": orEmptyStrings(in.Query)}
	limited, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	out, _, err := prog.ContextEval(limited, vars)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if limited.Err() != nil {
			return nil, fmt.Errorf("%s ran over its time limit of %s", kind, r.timeout)
		}
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	if types.IsError(out) {
		return nil, fmt.Errorf("%s: %v", kind, out)
	}
	return out.Value(), nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func orEmptyStrings(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
