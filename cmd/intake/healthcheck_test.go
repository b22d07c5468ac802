package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// runCLI parses args as main does and runs the command without a server of
// the test's own, returning stdout and the command's error.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var cli CLI
	var out, errOut bytes.Buffer
	cli.Client.out = &out
	cli.Client.errOut = &errOut
	parser, err := kong.New(&cli, kong.Name("intake"), kong.Vars{"version": currentBuild().String()},
		kong.Writers(&out, &errOut), kong.Exit(func(code int) { t.Fatalf("intake %v exited %d", args, code) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := parser.Parse(args)
	if err != nil {
		t.Fatalf("intake %v: %v", args, err)
	}
	err = ctx.Run(&cli.Client)
	return out.String(), err
}

// readyz serves /readyz with the given status and body, like serve does.
func readyz(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHealthcheckPassesWhenReadyzAnswers200(t *testing.T) {
	t.Setenv("INTAKE_URL", "")
	srv := readyz(t, http.StatusOK, "ready\n")
	out, err := runCLI(t, "healthcheck", "--server", srv.URL)
	if err != nil || out != "" {
		t.Fatalf("ready server: err %v, stdout %q", err, out)
	}
}

func TestHealthcheckFailsWithOneLineNamingTheReasonWhenNotReady(t *testing.T) {
	t.Setenv("INTAKE_URL", "")
	srv := readyz(t, http.StatusServiceUnavailable, "store unavailable\nmore detail\n")
	_, err := runCLI(t, "healthcheck", "--server", srv.URL)
	if err == nil {
		t.Fatal("a 503 from /readyz passed the healthcheck")
	}
	want := "healthcheck: " + srv.URL + "/readyz: not ready: 503 store unavailable"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestHealthcheckFailsOnARedirectInsteadOfFollowingIt(t *testing.T) {
	t.Setenv("INTAKE_URL", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	if _, err := runCLI(t, "healthcheck", "--server", srv.URL); err == nil || !strings.Contains(err.Error(), "302") {
		t.Fatalf("redirect: %v", err)
	}
}

func TestHealthcheckGivesUpAfterItsTimeout(t *testing.T) {
	t.Setenv("INTAKE_URL", "")
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	defer close(release)
	_, err := runCLI(t, "healthcheck", "--server", srv.URL, "--timeout", "50ms")
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Fatalf("a server that never answers: %v", err)
	}
}

func TestHealthcheckFailsWhenNothingListens(t *testing.T) {
	t.Setenv("INTAKE_URL", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = runCLI(t, "healthcheck", "--addr", addr)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("nothing listening: %v", err)
	}
}

func TestHealthcheckAsksTheLoopbackOfTheServeAddress(t *testing.T) {
	t.Setenv("INTAKE_URL", "")
	srv := readyz(t, http.StatusOK, "ready\n")
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if _, err := runCLI(t, "healthcheck", "--addr", ":"+port); err != nil {
		t.Fatalf("--addr :%s: %v", port, err)
	}
	t.Setenv("INTAKE_ADDR", "0.0.0.0:"+port)
	if _, err := runCLI(t, "healthcheck"); err != nil {
		t.Fatalf("INTAKE_ADDR=0.0.0.0:%s: %v", port, err)
	}
}

func TestHealthcheckUsesINTAKE_URLWhenSet(t *testing.T) {
	srv := readyz(t, http.StatusOK, "ready\n")
	t.Setenv("INTAKE_URL", srv.URL+"/")
	t.Setenv("INTAKE_ADDR", "127.0.0.1:1")
	if _, err := runCLI(t, "healthcheck"); err != nil {
		t.Fatalf("INTAKE_URL=%s: %v", srv.URL, err)
	}
}

func TestHealthcheckTargetForEachListenAddress(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080",
		"0.0.0.0:8080":   "http://127.0.0.1:8080",
		"[::]:8080":      "http://[::1]:8080",
		"10.0.0.7:9000":  "http://10.0.0.7:9000",
		"localhost:8080": "http://localhost:8080",
	} {
		got, err := (&HealthcheckCmd{Addr: addr}).base(&Client{}, false)
		if err != nil || got != want {
			t.Errorf("--addr %s: %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := (&HealthcheckCmd{Addr: "8080"}).base(&Client{}, false); err == nil {
		t.Error("--addr 8080 (no colon) was accepted")
	}
}
