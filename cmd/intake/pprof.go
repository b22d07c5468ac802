//go:build pprof

package main

// Built with -tags pprof, the server also serves Go's profiler on
// INTAKE_PPROF_ADDR (default 127.0.0.1:6060), for performance work.

import (
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on the default mux
	"os"
)

func init() {
	addr := os.Getenv("INTAKE_PPROF_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6060"
	}
	go http.ListenAndServe(addr, nil)
}
