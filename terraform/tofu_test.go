package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests drive the real tofu (INTAKE_TOFU, built by .ci/run from
// github.com/opentofu/opentofu) against a real intake serve, with this
// provider installed through dev_overrides: the test binary itself is the
// plugin, serving when tofu starts it with intakeTFServe set.
const intakeTFServe = "INTAKE_TF_SERVE_PROVIDER"

const staffToken = "ist_tofu-staff-token"

var (
	tofuBinary   string // the tofu executable; "" when there is none
	intakeBinary string
	pluginDir    string // holds terraform-provider-intake, this test binary
)

func TestMain(m *testing.M) {
	if os.Getenv(intakeTFServe) == "1" {
		if err := serve(false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "intake-tofu")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if t := os.Getenv("INTAKE_TOFU"); t != "" {
		if _, err := os.Stat(t); err == nil {
			tofuBinary = t
		}
	}
	if tofuBinary != "" {
		intakeBinary = filepath.Join(dir, "intake")
		build := exec.Command("go", "build", "-o", intakeBinary, "github.com/intakehq/intake/cmd/intake")
		build.Dir = ".." // the main module
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building intake:", err)
			return 1
		}
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		pluginDir = filepath.Join(dir, "plugins")
		if err := os.MkdirAll(pluginDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := os.Symlink(self, filepath.Join(pluginDir, "terraform-provider-intake")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// needTofu skips a test without tofu, and fails it in CI, where .ci/run
// builds tofu and names it in INTAKE_TOFU.
func needTofu(t *testing.T) {
	t.Helper()
	if tofuBinary != "" {
		return
	}
	msg := "no tofu: set INTAKE_TOFU to an OpenTofu binary (.ci/run builds one into ~/.cache/intake-ci/tofu-*/tofu)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// harness is one intake serve and one tofu working directory.
type harness struct {
	t    *testing.T
	url  string // intake's address
	work string // the configuration's directory
	env  []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	needTofu(t)
	h := &harness{t: t, work: t.TempDir()}
	h.url = startIntake(t)
	rc := filepath.Join(t.TempDir(), "tofurc")
	writeFile(t, rc, fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.opentofu.org/intakehq/intake" = %q
  }
  direct {}
}
`, pluginDir))
	home := t.TempDir()
	h.env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "HOME="+home, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
		"INTAKE_URL="+h.url, "INTAKE_TOKEN="+staffToken, intakeTFServe+"=1")
	return h
}

// startIntake runs intake serve on a fresh data directory until the test
// ends and returns its address.
func startIntake(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(intakeBinary, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), "INTAKE_ADMIN_TOKEN="+staffToken)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan string, 1)
	var logs bytes.Buffer
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.Write(append(sc.Bytes(), '\n'))
			mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "intake serving" {
				serving <- rec.Addr
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	select {
	case addr := <-serving:
		return "http://" + addr
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("intake exited before serving:\n%s", logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("intake did not serve within 60s")
	}
	return ""
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// config writes the configuration tofu works on.
func (h *harness) config(hcl string) {
	h.t.Helper()
	writeFile(h.t, filepath.Join(h.work, "main.tf"), `terraform {
  required_providers {
    intake = { source = "intakehq/intake" }
  }
}
`+hcl)
}

// tofu runs tofu in the working directory and returns what it printed
// and its exit code.
func (h *harness) tofu(args ...string) (string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if args[0] != "state" { // state's subcommands print no colour, and take no -no-color before theirs
		args = append(args[:1:1], append([]string{"-no-color"}, args[1:]...)...)
	}
	cmd := exec.CommandContext(ctx, tofuBinary, args...)
	cmd.Dir, cmd.Env = h.work, h.env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		h.t.Fatalf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		return "", -1
	}
}

// must runs tofu and fails the test unless it exits with want.
func (h *harness) must(want int, args ...string) string {
	h.t.Helper()
	out, code := h.tofu(args...)
	if code != want {
		h.t.Fatalf("tofu %s exited %d, want %d:\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

// api calls intake's admin API with the staff token; out may be nil.
func (h *harness) api(method, path string, in, out any) int {
	h.t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.url+"/api/v1"+path, body)
	req.Header.Set("Authorization", "Bearer "+staffToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

// state is every resource's attributes as tofu's state holds them, by
// address.
func (h *harness) state() map[string]map[string]any {
	h.t.Helper()
	out := h.must(0, "show", "-json")
	var doc struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string         `json:"address"`
					Values  map[string]any `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		h.t.Fatalf("tofu show -json: %v\n%s", err, out)
	}
	m := map[string]map[string]any{}
	for _, r := range doc.Values.RootModule.Resources {
		m[r.Address] = r.Values
	}
	return m
}

// attr is a string attribute of a resource in a state; it fails the test
// when the resource is not there.
func (h *harness) attr(state map[string]map[string]any, addr, name string) string {
	h.t.Helper()
	r, ok := state[addr]
	if !ok {
		h.t.Fatalf("%s is not in the state", addr)
	}
	v, _ := r[name].(string)
	return v
}
