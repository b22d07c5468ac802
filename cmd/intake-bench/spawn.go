package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// server is an `intake serve` process this bench started on a temporary
// data directory.
type server struct {
	cmd  *exec.Cmd
	url  string
	data string
	done chan struct{}

	mu   sync.Mutex
	logs []string // the last lines it logged, to explain a failure
}

// serverEnv is the environment of the servers of one measurement: a fresh
// database on the PostgreSQL server db (none: the embedded store; INTAKE_DB
// is set even when empty, so an inherited one cannot choose the store), and
// one master key, so every server opens the secrets the others sealed.
// dropDB drops the database once the servers have stopped.
func serverEnv(ctx context.Context, db string, progress io.Writer) (env []string, dropDB func(), err error) {
	dbURL, dropDB := "", func() {}
	if db != "" {
		u, drop, err := freshDatabase(ctx, db)
		if err != nil {
			return nil, nil, err
		}
		dbURL, dropDB = u, func() {
			if err := drop(); err != nil {
				fmt.Fprintln(progress, "dropping the bench database:", err)
			}
		}
	}
	key := make([]byte, 32)
	rand.Read(key)
	return []string{"INTAKE_DB=" + dbURL, "INTAKE_MASTER_KEY=" + hex.EncodeToString(key)}, dropDB, nil
}

// spawn starts bin as `intake serve` on a free loopback port with staff
// token tok and this process's environment plus env, and waits until it
// logs that it is serving.
func spawn(bin, tok string, env ...string) (*server, error) {
	data, err := os.MkdirTemp("", "intake-bench")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(append(os.Environ(), "INTAKE_ADMIN_TOKEN="+tok), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(data)
		return nil, err
	}
	s := &server{cmd: cmd, data: data, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		// Read every line until it exits: a full pipe would block its logging.
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.log(sc.Text())
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "intake serving" {
				addr <- rec.Addr
			}
		}
	}()
	go func() { cmd.Wait(); close(s.done) }()
	select {
	case a := <-addr:
		s.url = "http://" + a
		return s, nil
	case <-s.done:
		err = fmt.Errorf("%s exited before serving:\n%s", bin, s.tail())
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("%s did not start serving in 30s:\n%s", bin, s.tail())
	}
	s.stop()
	return nil, err
}

func (s *server) log(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, line)
	if len(s.logs) > 50 {
		s.logs = s.logs[1:]
	}
}

func (s *server) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.logs, "\n")
}

// peakRSS is the process's peak resident set so far (VmHWM), in bytes.
func (s *server) peakRSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	return parseVmHWM(b)
}

// cpuSeconds is the CPU time, user and system, the server has used so far.
func (s *server) cpuSeconds() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTicks = 100

// parseStatCPU reads utime and stime, the 14th and 15th fields of
// /proc/<pid>/stat (counted after the command, which may hold spaces).
func parseStatCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command in %q", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q stime %q", f[11], f[12])
	}
	return float64(utime+stime) / clockTicks, nil
}

// treeRSS is the resident set, in bytes, of the server and its children
// (its script hosts) now: what they hold together at this moment.
func (s *server) treeRSS() int64 {
	pids := []int{s.cmd.Process.Pid}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", s.cmd.Process.Pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(field); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	var sum int64
	for _, pid := range pids {
		// A host that ended between the two reads holds nothing.
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			if rss, err := statusBytes(b, "VmRSS"); err == nil {
				sum += rss
			}
		}
	}
	return sum
}

func parseVmHWM(status []byte) (int64, error) { return statusBytes(status, "VmHWM") }

// statusBytes reads a field counted in kB from /proc/<pid>/status.
func statusBytes(status []byte, field string) (int64, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte(field+":"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no %s line", field)
}

// stop drains the server with SIGTERM (SIGKILL after 30s) and removes its
// data directory.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.data)
}

// kill ends the server at once, without draining (held calls and running
// scripts end with it), and removes its data directory.
func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.done
	os.RemoveAll(s.data)
}

// stopAll stops every server at once: each may take its drain time.
func stopAll(srvs []*server) {
	var wg sync.WaitGroup
	for _, s := range srvs {
		wg.Go(s.stop)
	}
	wg.Wait()
}

// baseline serves the machine's own HTTP ceiling on loopback: read the
// body, answer 202, store nothing.
type baseline struct {
	url string
	srv *http.Server
}

func startBaseline() (*baseline, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &baseline{url: "http://" + ln.Addr().String() + "/webhooks/baseline"}
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}), ReadHeaderTimeout: 10 * time.Second}
	go b.srv.Serve(ln)
	return b, nil
}

func (b *baseline) close() { b.srv.Close() }

// sampleRSS reads treeRSS every 100 ms until ctx ends; peak returns the
// most it read.
func (s *server) sampleRSS(ctx context.Context) (peak func() int64) {
	var most atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss := s.treeRSS(); rss > most.Load() {
				most.Store(rss)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { <-done; return most.Load() }
}
