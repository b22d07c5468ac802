package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// healthcheck runs `intake healthcheck --addr addr` and returns its exit
// code and stderr.
func healthcheck(t *testing.T, addr string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, "healthcheck", "--addr", addr, "--timeout", "5s")
	cmd.Env = append(os.Environ(), "INTAKE_URL=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestHealthcheckPassesOnAServingProcessAndFailsOnceItIsGone is the
// container probe against the real server: exit 0 while it serves, exit 1
// with one line on stderr after it is killed.
func TestHealthcheckPassesOnAServingProcessAndFailsOnceItIsGone(t *testing.T) {
	s := start(t, t.TempDir())
	addr := strings.TrimPrefix(s.url, "http://")
	if code, stderr := healthcheck(t, addr); code != 0 || stderr != "" {
		t.Fatalf("serving: exit %d, stderr %q", code, stderr)
	}
	s.kill()
	code, stderr := healthcheck(t, addr)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "/readyz") {
		t.Fatalf("killed: exit %d, stderr %q", code, stderr)
	}
}

// TestMetricsCarryTheBuildInfo: /metrics names the running build.
func TestMetricsCarryTheBuildInfo(t *testing.T) {
	s := start(t, t.TempDir())
	families := s.scrape(t)
	if got := value(families, "intake_build_info", "goversion", runtime.Version(), "version", "dev"); got != 1 {
		t.Fatalf("intake_build_info{goversion=%q,version=dev} = %v; families: %v", runtime.Version(), got, families["intake_build_info"])
	}
}

// TestVersionReportsWhatTheLinkerWasGiven builds intake as a release is
// built (-ldflags -X) and reads the result back from the binary.
func TestVersionReportsWhatTheLinkerWasGiven(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "intake")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X main.version=v1.2.3-e2e -X main.commit=0123abc", "github.com/intakehq/intake/cmd/intake")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	want := "intake v1.2.3-e2e (commit 0123abc, " + runtime.Version() + ")\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || string(out) != want {
			t.Errorf("intake %v: %q, %v; want %q", args, out, err, want)
		}
	}
}
