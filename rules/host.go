package rules

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/intakehq/intake"
)

// A script host is this same executable started again with hostEnv set:
// the init below serves calls on stdin and stdout until stdin closes, and
// never returns to the program's main. Any binary that imports rules (a
// test binary too) can so serve as its own hosts.
const hostEnv = "INTAKE_SCRIPT_HOST"

func init() {
	if conf, ok := os.LookupEnv(hostEnv); ok {
		os.Exit(serveHost(conf, os.Stdin, os.Stdout))
	}
}

// hostConfig is what a host is told of the engine's limits, as JSON in
// hostEnv.
type hostConfig struct {
	ScriptTimeout time.Duration `json:"timeout"`
	ScriptMemory  int           `json:"memory"`
	MaxOutput     int           `json:"max_output"`
	HostVMs       int           `json:"vms"`
}

// Operations a host is sent, and the status of its answer.
const (
	opCall  = "call"  // run a script's entry function
	opCheck = "check" // load a script in a VM closed at once

	statusReady    = "ready"    // the host's first frame
	statusOK       = "ok"       // the call's result follows
	statusScript   = "script"   // the script failed: reason and message follow
	statusInvalid  = "invalid"  // the script does not load: the message follows
	statusInternal = "internal" // the engine failed: the message follows
)

// hostRequest is one call sent to a host.
type hostRequest struct {
	op     string
	kind   Kind
	key    [sha256.Size]byte // the script's version, for the host's VM cache
	source string
	args   string
	reuse  bool
}

// Bounds of the address space a host may map, above what it mapped as it
// started (the executable, the Go runtime's reservations: some 1.5 GiB):
// each VM it keeps full, its input held three times at most (the frame,
// its string, the engine's copy into the VM; the input is at most half a
// VM's memory, see Engine.interpret), and a reserve for the Go runtime,
// whose heap grows by 64 MiB arenas. With every VM full and the largest
// inputs (as TestAHostWithEveryVMFullStillTakesTheLargestInput, at 16 and
// 128 MiB per VM), a reserve of 96 MiB failed one run of two and 128 MiB
// none of five; 192 MiB keeps one arena of margin.
const (
	hostGoReserve   = 192 << 20
	hostInputCopies = 2 // in VMs' memory: three copies of half of one
	// hostGoMemory is the Go heap a host aims to stay under: it holds one
	// call's frames and their strings.
	hostGoMemory = 64 << 20
)

// hostAddressSpace is what a host may map above what it mapped as it
// started.
func hostAddressSpace(cfg Config) int64 {
	return hostGoReserve + int64(cfg.HostVMs+hostInputCopies)*int64(cfg.ScriptMemory)
}

// serveHost answers calls read from in on out, one at a time, until in
// closes (the engine closed the host, or died: then so does the host).
func serveHost(conf string, in io.Reader, out io.Writer) int {
	var hc hostConfig
	if err := json.Unmarshal([]byte(conf), &hc); err != nil {
		fmt.Fprintln(os.Stderr, "rules: script host:", err)
		return 2
	}
	cfg := Config{ScriptTimeout: hc.ScriptTimeout, ScriptMemory: hc.ScriptMemory, MaxOutput: hc.MaxOutput, HostVMs: hc.HostVMs}.withDefaults()
	debug.SetMemoryLimit(hostGoMemory)
	if !raceEnabled {
		if err := limitAddressSpace(hostAddressSpace(cfg)); err != nil {
			fmt.Fprintln(os.Stderr, "rules: script host:", err)
			return 2
		}
	}
	r := newVMRunner(cfg)
	br, bw := bufio.NewReaderSize(in, 64<<10), bufio.NewWriterSize(out, 64<<10)
	if writeFrame(bw, statusReady) != nil || bw.Flush() != nil {
		return 0
	}
	for {
		f, err := readFrame(br, maxRequest)
		if err != nil || len(f) != 6 || len(f[2]) != sha256.Size {
			return 0
		}
		req := hostRequest{op: string(f[0]), kind: Kind(f[1]), source: string(f[4]), args: string(f[5]), reuse: string(f[3]) == "1"}
		copy(req.key[:], f[2])
		if writeFrame(bw, r.serve(&req)...) != nil || bw.Flush() != nil {
			return 0
		}
	}
}

// serve runs one request and returns the fields of its answer: status, VMs
// kept, whether the request's VM was kept, then what the status says.
func (r *vmRunner) serve(req *hostRequest) []string {
	var (
		res  []byte
		kept bool
		err  error
	)
	if req.op == opCheck {
		err = r.check(req.kind, req.source)
	} else {
		res, kept, err = r.call(req.kind, req.key, req.source, req.args, req.reuse)
	}
	head := []string{"", strconv.Itoa(r.vms.size()), flag(kept)}
	var se *ScriptError
	switch {
	case err == nil:
		head[0] = statusOK
		return append(head, string(res))
	case errors.As(err, &se):
		head[0] = statusScript
		return append(head, se.Reason, se.Message)
	case intake.ErrorCode(err) == intake.EINVALID:
		head[0] = statusInvalid
		return append(head, intake.ErrorMessage(err))
	}
	head[0] = statusInternal
	return append(head, err.Error())
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// maxRequest bounds a frame a host reads. The engine writes every frame,
// so it only guards against a broken stream.
const maxRequest = 1 << 30

// A frame is its length (4 bytes, big-endian), then its fields, each a
// uvarint length and its bytes: a script's arguments and result cross as
// they are, with no escaping.
func writeFrame(w *bufio.Writer, fields ...string) error {
	var b [binary.MaxVarintLen64]byte
	n := 0
	for _, f := range fields {
		n += len(binary.AppendUvarint(b[:0], uint64(len(f)))) + len(f)
	}
	if n > 1<<32-1 {
		return errors.New("rules: frame too large")
	}
	w.Write(binary.BigEndian.AppendUint32(b[:0], uint32(n)))
	for _, f := range fields {
		w.Write(binary.AppendUvarint(b[:0], uint64(len(f))))
		w.WriteString(f)
	}
	return nil
}

// readFrame reads one frame of at most max bytes and returns its fields,
// which share one buffer.
func readFrame(r *bufio.Reader, max int) ([][]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(head[:]))
	if n > max {
		return nil, fmt.Errorf("rules: frame of %d bytes, at most %d", n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	var fields [][]byte
	for len(buf) > 0 {
		l, k := binary.Uvarint(buf)
		if k <= 0 || l > uint64(len(buf)-k) {
			return nil, errors.New("rules: malformed frame")
		}
		fields = append(fields, buf[k:k+int(l)])
		buf = buf[k+int(l):]
	}
	return fields, nil
}

// tail keeps the last bytes a host wrote to its stderr: the Go runtime's
// last words when the host died on its own.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(bytes.ToValidUTF8(t.buf, nil)))
}
