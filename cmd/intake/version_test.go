package main

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/prometheus/client_golang/prometheus"
)

func TestVersionPrintsVersionCommitAndGoVersion(t *testing.T) {
	out, err := runCLI(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	b := currentBuild()
	want := "intake " + b.Version + " (commit " + b.Commit + ", " + runtime.Version() + ")\n"
	if out != want {
		t.Fatalf("intake version printed %q, want %q", out, want)
	}
}

func TestVersionFlagPrintsTheSameLineAsTheCommand(t *testing.T) {
	var cli CLI
	var out bytes.Buffer
	exited := -1
	parser, err := kong.New(&cli, kong.Name("intake"), kong.Vars{"version": currentBuild().String()},
		kong.Writers(&out, &out), kong.Exit(func(code int) { exited = code; panic(exitPanic{}) }))
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (exitPanic{}) {
				panic(r)
			}
		}()
		parser.Parse([]string{"--version"})
	}()
	if exited != 0 || out.String() != currentBuild().String()+"\n" {
		t.Fatalf("--version exited %d printing %q", exited, out.String())
	}
}

// exitPanic stops parsing where kong would exit the process.
type exitPanic struct{}

func TestBuildInfoPrefersLinkerValuesOverTheToolchainRecord(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "feedface"}, {Key: "vcs.modified", Value: "true"}}}
	got := fromBuildInfo(buildInfo{Version: "v1.2.3", Commit: "0123abc"}, info)
	if got.Version != "v1.2.3" || got.Commit != "0123abc" {
		t.Fatalf("linker values were overridden: %+v", got)
	}
}

func TestBuildInfoFallsBackToModuleVersionAndVCSRevision(t *testing.T) {
	for _, c := range []struct {
		name                  string
		info                  debug.BuildInfo
		wantVersion, wantComm string
	}{
		{"go install of a tag", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0", ""},
		{"clean checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "feedface"}, {Key: "vcs.modified", Value: "false"}}}, "", "feedface"},
		{"edited checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "feedface"}, {Key: "vcs.modified", Value: "true"}}}, "", "feedface-dirty"},
	} {
		got := fromBuildInfo(buildInfo{}, &c.info)
		if got.Version != c.wantVersion || got.Commit != c.wantComm {
			t.Errorf("%s: %+v, want version %q commit %q", c.name, got, c.wantVersion, c.wantComm)
		}
	}
}

func TestBuildInfoMetricIsOneWithTheBuildAsLabels(t *testing.T) {
	b := buildInfo{Version: "v1.2.3", Commit: "0123abc", GoVersion: "go1.26.8"}
	r := prometheus.NewRegistry()
	r.MustRegister(b.collector())
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "intake_build_info" || len(families[0].Metric) != 1 {
		t.Fatalf("gathered %v", families)
	}
	m := families[0].Metric[0]
	labels := map[string]string{}
	for _, l := range m.Label {
		labels[l.GetName()] = l.GetValue()
	}
	if m.GetGauge().GetValue() != 1 || labels["version"] != "v1.2.3" || labels["commit"] != "0123abc" ||
		labels["goversion"] != "go1.26.8" || len(labels) != 3 {
		t.Fatalf("intake_build_info %v = %v", labels, m.GetGauge().GetValue())
	}
}
