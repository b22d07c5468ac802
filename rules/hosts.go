package rules

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
)

// hostPool runs JS calls in script hosts, child processes that are killed
// when a call outlives its deadline or its caller: QuickJS checks for an
// interrupt only between bytecodes, so a native builtin
// (a.length = 1e8; a.lastIndexOf(1)) runs on for seconds past any limit,
// and a goroutine running it cannot be stopped. Calls waiting for a host
// queue per scope (an org), and a freed host goes to the scope with the
// fewest calls running, then to the one served least recently: one org's
// queue of slow scripts never waits in front of another org's call. A
// scope holds at most its share of the hosts (see shareOf), so another
// org's call finds a host while one org's scripts run to their limits.
type hostPool struct {
	cfg   Config
	env   []string      // a host's whole environment: its marker and config, none of the server's secrets
	limit time.Duration // how long a call may take in its host before the host is killed

	mu      sync.Mutex
	all     map[*host]bool // alive, busy or idle
	idle    []*host        // most recently returned last
	live    int            // hosts alive or being started
	shares  map[string]*share
	running map[string]int // calls running per scope; a scope running none is not in it
	waiting int
	turn    uint64 // counts the grants
	arrived uint64 // counts the calls that waited
	closed  bool

	granted func(scope string) // if set, called as a call is given a host: tests watch the order
}

// share is one scope's calls waiting, first come first served (its calls
// running are counted in hostPool.running).
type share struct {
	last  uint64 // the turn of its last grant
	queue []waiter
}

// waiter is a call of version key waiting for a host; seq orders arrivals
// across scopes.
type waiter struct {
	ch  chan grant
	seq uint64
	key [sha256.Size]byte
}

// grant gives a waiting call a host, or when h is nil room to start one,
// unless the engine closed.
type grant struct {
	h      *host
	closed bool
}

// hostGrace is what a call's deadline allows above the script's own
// limits, for the round trip and the host's scheduling.
const hostGrace = 100 * time.Millisecond

// hostStartTimeout bounds how long a new host may take to say it is ready.
const hostStartTimeout = 30 * time.Second

func newHostPool(cfg Config) *hostPool {
	conf, _ := json.Marshal(hostConfig{ScriptTimeout: cfg.ScriptTimeout, ScriptMemory: cfg.ScriptMemory,
		MaxOutput: cfg.MaxOutput, HostVMs: cfg.HostVMs})
	return &hostPool{
		cfg: cfg,
		// The host's tracebacks are cut to the fatal error: its stderr is
		// read only for the cause of its death.
		env: []string{hostEnv + "=" + string(conf), "GOTRACEBACK=none"},
		// A call may load its script (its top level is timed) and then
		// run it (timed again).
		limit:  2*cfg.ScriptTimeout + hostGrace,
		all:    map[*host]bool{},
		shares: map[string]*share{}, running: map[string]int{},
	}
}

// run sends req to a host of scope's share and returns the result JSON. A
// call killed at its deadline is a ReasonTimeout *ScriptError (an EINVALID
// error for a check); a call whose caller left is ctx.Err().
func (p *hostPool) run(ctx context.Context, scope string, req *hostRequest) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, err := p.acquire(ctx, scope, req.key)
	if err != nil {
		return nil, err
	}
	res, err := h.exchange(ctx, p.cfg, req, p.limit)
	p.release(scope, h)
	return res, err
}

// acquire waits in scope's queue for a host, preferring an idle one that
// has version key loaded, and starts one when there is room.
func (p *hostPool) acquire(ctx context.Context, scope string, key [sha256.Size]byte) (*host, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("rules: the engine is closed")
	}
	sh := p.shares[scope]
	if sh == nil {
		sh = &share{}
		p.shares[scope] = sh
	}
	if p.waiting == 0 && p.running[scope] < p.shareOf(scope) {
		if h, ok := p.pick(key); ok {
			p.grant(scope, sh)
			p.mu.Unlock()
			return p.ready(ctx, scope, h)
		}
	}
	wait := make(chan grant, 1)
	p.arrived++
	sh.queue = append(sh.queue, waiter{wait, p.arrived, key})
	p.waiting++
	p.give() // the calls waiting may be over their shares, this one not
	p.mu.Unlock()
	select {
	case g := <-wait:
		if g.closed {
			return nil, errors.New("rules: the engine is closed")
		}
		return p.ready(ctx, scope, g.h)
	case <-ctx.Done():
	}
	p.mu.Lock()
	for i, w := range sh.queue {
		if w.ch == wait {
			sh.queue = append(sh.queue[:i], sh.queue[i+1:]...)
			p.waiting--
			p.forget(scope, sh)
			p.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	p.mu.Unlock()
	// A host was granted as the caller left: pass it on.
	switch g := <-wait; {
	case g.h != nil:
		p.release(scope, g.h)
	case !g.closed:
		p.drop(scope)
	}
	return nil, ctx.Err()
}

// ready returns h, or a new host when h is nil.
func (p *hostPool) ready(ctx context.Context, scope string, h *host) (*host, error) {
	if h != nil {
		return h, nil
	}
	h, err := p.start(ctx)
	if err != nil {
		p.drop(scope)
		return nil, err
	}
	return h, nil
}

func (p *hostPool) max() int { return p.cfg.Hosts }

// shareOf is the most hosts scope may hold (fair.ShareOf): three quarters
// of them shared among the scopes running calls, so that a quarter is
// always left for a scope running none. p.mu is held.
func (p *hostPool) shareOf(scope string) int {
	return int(fair.ShareOf(int64(p.max()), p.running, scope))
}

// pick chooses what serves a call of version key: an idle host that has
// key loaded, else room for a new host, else the idle host used last; ok
// is false when there is none. A host warm with another script is taken
// last, so a call that will run to its limit does not take the host
// another org's next call would find its script in. p.mu is held.
func (p *hostPool) pick(key [sha256.Size]byte) (h *host, ok bool) {
	i := -1
	for j, h := range p.idle {
		if _, ok := h.keys[key]; ok {
			i = j
		}
	}
	switch {
	case i < 0 && p.live < p.max():
		p.live++
		return nil, true
	case i < 0 && len(p.idle) > 0:
		i = len(p.idle) - 1
	case i < 0:
		return nil, false
	}
	h = p.idle[i]
	p.idle = append(p.idle[:i], p.idle[i+1:]...)
	return h, true
}

// grant counts a call of sh given a host. p.mu is held.
func (p *hostPool) grant(scope string, sh *share) {
	p.turn++
	p.running[scope]++
	sh.last = p.turn
	if p.granted != nil {
		p.granted(scope)
	}
}

// next gives a host (or room for one) to the waiting call of the scope
// with the fewest calls running, then the least recently served, then the
// one waiting longest, among the scopes below their share; false when no
// such call waits or nothing is free. p.mu is held.
func (p *hostPool) next() bool {
	if p.waiting == 0 || p.closed {
		return false
	}
	var (
		scope string
		best  *share
	)
	for s, sh := range p.shares {
		if len(sh.queue) > 0 && p.running[s] < p.shareOf(s) && (best == nil || p.before(s, sh, scope, best)) {
			scope, best = s, sh
		}
	}
	if best == nil {
		return false
	}
	w := best.queue[0]
	h, ok := p.pick(w.key)
	if !ok {
		return false
	}
	best.queue = best.queue[1:]
	p.waiting--
	p.grant(scope, best)
	w.ch <- grant{h: h}
	return true
}

// before reports whether the next call of a (scope as) is served before
// b's (scope bs). p.mu is held.
func (p *hostPool) before(as string, a *share, bs string, b *share) bool {
	if ra, rb := p.running[as], p.running[bs]; ra != rb {
		return ra < rb
	}
	if a.last != b.last {
		return a.last < b.last
	}
	return a.queue[0].seq < b.queue[0].seq
}

// release returns h after a call of scope: to a waiting call, or idle; a
// host that was killed or died is reaped, and its room given on. A call
// ending may bring other scopes' waiting calls within their shares: they
// get the idle hosts and the room too.
func (p *hostPool) release(scope string, h *host) {
	p.mu.Lock()
	p.done(scope)
	alive := h.alive() && !p.closed
	if alive {
		p.idle = append(p.idle, h)
	} else {
		delete(p.all, h)
		p.live--
	}
	p.give()
	p.mu.Unlock()
	if !alive {
		h.close()
	}
}

// drop gives up the room of a host that failed to start.
func (p *hostPool) drop(scope string) {
	p.mu.Lock()
	p.done(scope)
	p.live--
	p.give()
	p.mu.Unlock()
}

// give offers the idle hosts and the room for new ones to the waiting
// calls within their shares. p.mu is held.
func (p *hostPool) give() {
	for p.next() {
	}
}

// done counts a call of scope that ended. p.mu is held.
func (p *hostPool) done(scope string) {
	if p.running[scope]--; p.running[scope] <= 0 {
		delete(p.running, scope)
	}
	p.forget(scope, p.shares[scope])
}

// forget drops a share with nothing running or waiting. p.mu is held.
func (p *hostPool) forget(scope string, sh *share) {
	if p.running[scope] == 0 && len(sh.queue) == 0 {
		delete(p.shares, scope)
	}
}

// start starts a host and waits for it to be ready.
func (p *hostPool) start(ctx context.Context) (*host, error) {
	cmd := exec.Command(hostPath)
	cmd.Env = p.env
	cmd.SysProcAttr = hostAttr()
	h := &host{cmd: cmd, keys: map[[sha256.Size]byte]uint64{}}
	cmd.Stderr = &h.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("rules: start a script host: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("rules: start a script host: %w", err)
	}
	h.w, h.r = bufio.NewWriterSize(stdin, 64<<10), bufio.NewReaderSize(stdout, 64<<10)
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("rules: start a script host: %w", err)
	}
	h.pid = cmd.Process.Pid
	f, err := h.guard(ctx, hostStartTimeout, func() ([][]byte, error) { return readFrame(h.r, maxResponse(p.cfg)) })
	if err == nil && (len(f) != 1 || string(f[0]) != statusReady) {
		err = errors.New("rules: a script host began with something else than ready")
	}
	if err != nil {
		status := h.close()
		if h.killed.Load() == killCaller {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("rules: start a script host: %v, %v: %s", err, status, h.stderr.String())
	}
	p.mu.Lock()
	p.all[h] = true
	p.mu.Unlock()
	return h, nil
}

// maxResponse bounds a frame the engine reads from a host: the output
// limit and an error message.
func maxResponse(cfg Config) int { return cfg.MaxOutput + 64<<10 }

// vms counts the VMs loaded in every host.
func (p *hostPool) vms() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for h := range p.all {
		n += int(h.vms.Load())
	}
	return n
}

// close kills the idle hosts and turns away the waiting calls; busy hosts
// are killed as their calls return.
func (p *hostPool) close() {
	p.mu.Lock()
	p.closed = true
	for _, sh := range p.shares {
		for _, w := range sh.queue {
			w.ch <- grant{closed: true}
		}
		p.waiting -= len(sh.queue)
		sh.queue = nil
	}
	idle := p.idle
	p.idle = nil
	for _, h := range idle {
		delete(p.all, h)
		p.live--
	}
	p.mu.Unlock()
	for _, h := range idle {
		h.close()
	}
}

// host is one script host process, used by one call at a time.
type host struct {
	cmd    *exec.Cmd
	pid    int
	w      *bufio.Writer
	r      *bufio.Reader
	stderr tail
	vms    atomic.Int32 // VMs loaded, as it last said
	// keys are the versions it has loaded, with the turn each was last
	// used: a call prefers a host that has its script loaded.
	keys   map[[sha256.Size]byte]uint64
	uses   uint64
	killed atomic.Int32
	closed atomic.Bool

	closeOnce sync.Once
	status    error // how it exited
}

// Why a host was killed.
const (
	killTimeout = 1 + iota // a call or its start passed its deadline
	killCaller             // the caller's context ended
)

// guard runs f, which talks to h, killing h if f outlasts limit or ctx.
// Once guard returns, no kill of this guard's comes: h may go on to serve
// another call.
func (h *host) guard(ctx context.Context, limit time.Duration, f func() ([][]byte, error)) ([][]byte, error) {
	var (
		mu       sync.Mutex
		finished bool
	)
	kill := func(why int32) {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			h.kill(why)
		}
	}
	timer := time.AfterFunc(limit, func() { kill(killTimeout) })
	stop := context.AfterFunc(ctx, func() { kill(killCaller) })
	fields, err := f()
	mu.Lock()
	finished = true
	mu.Unlock()
	timer.Stop()
	stop()
	return fields, err
}

// exchange sends req to h and reads its answer, killing h at the deadline.
func (h *host) exchange(ctx context.Context, cfg Config, req *hostRequest, limit time.Duration) ([]byte, error) {
	f, err := h.guard(ctx, limit, func() ([][]byte, error) {
		if err := writeFrame(h.w, req.op, string(req.kind), string(req.key[:]), flag(req.reuse), req.source, req.args); err != nil {
			return nil, err
		}
		if err := h.w.Flush(); err != nil {
			return nil, err
		}
		return readFrame(h.r, maxResponse(cfg))
	})
	if err == nil && len(f) < 4 {
		err = errors.New("rules: a script host answered a malformed frame")
	}
	if err != nil {
		return nil, h.failed(ctx, cfg, req, err)
	}
	n, _ := strconv.Atoi(string(f[1]))
	h.vms.Store(int32(n))
	h.remember(cfg, req.key, string(f[2]) == "1")
	switch string(f[0]) {
	case statusOK:
		return f[3], nil
	case statusScript:
		if len(f) == 5 {
			return nil, &ScriptError{Kind: req.kind, Reason: string(f[3]), Message: string(f[4])}
		}
	case statusInvalid:
		return nil, intake.Errorf(intake.EINVALID, "%s", f[3])
	case statusInternal:
		return nil, fmt.Errorf("rules: script host: %s", f[3])
	}
	h.kill(killTimeout)
	return nil, fmt.Errorf("rules: a script host answered status %q", f[0])
}

// failed reaps h, whose call ended without an answer, and says why.
func (h *host) failed(ctx context.Context, cfg Config, req *hostRequest, err error) error {
	status := h.close()
	var se *ScriptError
	switch h.killed.Load() {
	case killCaller:
		return ctx.Err()
	case killTimeout:
		se = timeoutError(cfg, req.kind)
	default:
		// It died on its own: the address-space limit, most likely.
		last := h.stderr.String()
		if strings.Contains(last, "out of memory") || strings.Contains(last, "OOM") || strings.Contains(last, "errno=12") {
			se = memoryError(cfg, req.kind)
		} else {
			se = &ScriptError{Kind: req.kind, Reason: ReasonInternal, Message: fmt.Sprintf("the script host failed (%v, %v): %s", err, status, lastLine(last))}
		}
	}
	if req.op == opCheck {
		return intake.Errorf(intake.EINVALID, "%s fails while loading: %s", req.kind, se.Message)
	}
	return se
}

// remember notes whether h kept key's VM, forgetting the least recently
// used versions past what a host keeps.
func (h *host) remember(cfg Config, key [sha256.Size]byte, kept bool) {
	if !kept {
		delete(h.keys, key)
		return
	}
	h.uses++
	h.keys[key] = h.uses
	if len(h.keys) > cfg.HostVMs {
		var oldest [sha256.Size]byte
		least := h.uses
		for k, u := range h.keys {
			if u < least {
				oldest, least = k, u
			}
		}
		delete(h.keys, oldest)
	}
}

// kill stops h at once; the first reason given is kept.
func (h *host) kill(why int32) {
	h.killed.CompareAndSwap(0, why)
	h.cmd.Process.Kill()
}

func (h *host) alive() bool { return h.killed.Load() == 0 && !h.closed.Load() }

// close kills h and reaps it, and returns how it exited.
func (h *host) close() error {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		h.cmd.Process.Kill()
		h.status = h.cmd.Wait()
		if h.status == nil {
			h.status = io.EOF
		}
	})
	return h.status
}

// lastLine is the last line of what a host wrote to stderr, cut to a size:
// the Go runtime's fatal error, when it died of one.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
