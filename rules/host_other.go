//go:build !linux

package rules

import (
	"os"
	"os/exec"
	"syscall"
)

// hostPath is the executable a host runs: this one.
var hostPath, _ = os.Executable()

// hostAttr: only Linux kills a child when its parent dies; elsewhere a host
// outlives a crashed engine until it next reads its closed stdin.
func hostAttr() *syscall.SysProcAttr { return nil }

func spawn(cmd *exec.Cmd) error { return cmd.Start() }

// limitAddressSpace: the address-space limit is set on Linux only.
func limitAddressSpace(int64) error { return nil }
