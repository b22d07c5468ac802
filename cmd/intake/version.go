package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// version and commit name this build; release builds set them with
// -ldflags "-X main.version=v1.2.3 -X main.commit=<sha>".
var (
	version string
	commit  string
)

// buildInfo says which build of intake is running, for `intake version`,
// --version and /metrics.
type buildInfo struct {
	Version   string
	Commit    string
	GoVersion string
}

// currentBuild prefers the values set at link time and falls back to what
// the Go toolchain recorded: the module version (go install …@v1.2.3) and
// the VCS revision (go build in a checkout).
func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		b = fromBuildInfo(b, info)
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// fromBuildInfo fills what the linker left empty from the toolchain's record.
func fromBuildInfo(b buildInfo, info *debug.BuildInfo) buildInfo {
	if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	if b.Commit != "" {
		return b
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision != "" && modified == "true" {
		revision += "-dirty"
	}
	b.Commit = revision
	return b
}

func (b buildInfo) String() string {
	return fmt.Sprintf("intake %s (commit %s, %s)", b.Version, b.Commit, b.GoVersion)
}

// collector is the intake_build_info gauge: always 1, the build in its
// labels, so dashboards can join any series with the version serving it.
func (b buildInfo) collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "intake_build_info",
		Help:        "The running build of intake: version, commit and Go version as labels; always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

// VersionCmd prints the build's version, commit and Go version.
type VersionCmd struct{}

// Run prints one line, the same as --version.
func (VersionCmd) Run(cl *Client) error {
	_, err := fmt.Fprintln(cl.stdout(), currentBuild())
	return err
}
