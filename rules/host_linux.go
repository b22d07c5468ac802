package rules

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// hostPath is the executable a host runs: this one, even when its file has
// been replaced or removed since it started (an upgrade in place).
const hostPath = "/proc/self/exe"

// hostAttr kills a host when the thread that started it ends, so hosts die
// with the engine's process.
func hostAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

var (
	spawns    = make(chan spawnRequest)
	spawnOnce sync.Once
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// spawn starts cmd from one thread that never ends: Linux sends a child
// its Pdeathsig when the thread that forked it exits, and the Go runtime
// may end a thread a goroutine left locked.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread()
			for r := range spawns {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawns <- spawnRequest{cmd, done}
	return <-done
}

// limitAddressSpace caps what this process may map to what it has mapped
// now plus extra bytes: an allocation past it fails (QuickJS reports out of
// memory; the Go runtime dies, and the engine starts another host).
func limitAddressSpace(extra int64) error {
	now, err := vmSize()
	if err != nil {
		return err
	}
	lim := uint64(now + extra)
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
}

// vmSize reads the bytes this process has mapped.
func vmSize() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("rules: no VmSize in /proc/self/status")
}
