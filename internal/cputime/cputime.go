//go:build unix

// Package cputime reads the CPU time this process has used, user and
// system, so benchmarks can report what a request costs in CPU beside what
// it costs in wall time: on a shared machine the first varies far less.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time the process has used so far; zero where the
// system cannot tell.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
