package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake/internal/seal"
)

// newKey is a fresh master key and its INTAKE_MASTER_KEY setting.
func newKey() ([]byte, string) {
	k := make([]byte, seal.KeySize)
	rand.Read(k)
	return k, "INTAKE_MASTER_KEY=" + hex.EncodeToString(k)
}

// serveToExit runs `intake serve` over data until it exits (at most 30s)
// and returns its exit code and what it wrote to stderr.
func serveToExit(t *testing.T, env []string, data string, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--log-format", "json"}, extra...)
	if onPostgres() && !slices.Contains(extra, "--db") {
		args = append(args, "--db", databaseFor(t, data))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(append(os.Environ(), "INTAKE_ADMIN_TOKEN="+staffToken), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatalf("intake serve: %v", err)
	return 0, ""
}

// wantRefused checks that a process exited 1 before serving, naming both
// fingerprints.
func wantRefused(t *testing.T, code int, stderr, storeFP, processFP string) {
	t.Helper()
	if code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "intake serving") {
		t.Fatalf("it served before refusing:\n%s", stderr)
	}
	if !strings.Contains(stderr, storeFP) || !strings.Contains(stderr, processFP) {
		t.Fatalf("stderr does not name the store's fingerprint %s and the process's %s:\n%s", storeFP, processFP, stderr)
	}
}

func TestADataDirectoryOpenedWithAnotherMasterKeyRefusesToServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	data := t.TempDir()
	first, firstEnv := newKey()
	s := launch(t, []string{firstEnv}, data)
	s.waitServing(t)
	setupGitHub(t, s) // a connection with a sealed secret
	s.kill()

	other, otherEnv := newKey()
	code, stderr := serveToExit(t, []string{otherEnv}, data)
	wantRefused(t, code, stderr, seal.Fingerprint(first), seal.Fingerprint(other))

	// The right key still serves the same data.
	again := launch(t, []string{firstEnv}, data)
	again.waitServing(t)
}

func TestADataDirectoryRestoredBesideTheWrongMasterKeyFileRefusesToServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	data := t.TempDir()
	s := launch(t, nil, data) // generates <data>/master.key
	s.waitServing(t)
	setupGitHub(t, s)
	s.kill()
	b, err := os.ReadFile(filepath.Join(data, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := seal.ParseKey(string(b))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newKey()
	if err := os.WriteFile(filepath.Join(data, "master.key"), []byte(hex.EncodeToString(other)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := serveToExit(t, nil, data)
	wantRefused(t, code, stderr, seal.Fingerprint(first), seal.Fingerprint(other))
}

func TestASecondProcessWithAnotherMasterKeyExitsWhileTheFirstServes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	procs, db := onePostgres(t, 1)
	a := procs[0]
	path := setupGitHub(t, a)
	var recorded string
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), `SELECT value FROM meta WHERE name = 'master_key_fingerprint'`).Scan(&recorded); err != nil {
		t.Fatalf("the first process recorded no fingerprint: %v", err)
	}

	other, otherEnv := newKey()
	code, stderr := serveToExit(t, []string{otherEnv}, t.TempDir(), "--db", withPool(db))
	wantRefused(t, code, stderr, recorded, seal.Fingerprint(other))

	client := &http.Client{Timeout: 10 * time.Second}
	if status, body := postGitHub(t, client, a.url+path, "after-the-stray-key"); status != http.StatusOK {
		t.Fatalf("the first process after the stray one exited: %d %s", status, body)
	}
	eventually(t, 10*time.Second, "the first process processes the webhook", func() bool {
		for _, m := range a.messages(t) {
			if m.ProviderEventID == "after-the-stray-key" {
				return m.State == "processed"
			}
		}
		return false
	})
}
