package sdkcheck

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
)

// The providers whose official SDK is for Node.js only run through
// npm/sdk.mjs, with the SDKs npm/package-lock.json locks (.ci/run installs
// them with npm ci).
const npmDir = "npm"

// node is the path of node with the SDKs installed; in CI a missing node or
// SDK fails the test, elsewhere it skips it.
func node(t testing.TB) string {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; .ci/run installs node and the SDKs", what)
		}
		t.Skipf("%s (cd provider/sdkcheck/npm && npm ci)", what)
	}
	path, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(npmDir, "node_modules", ".package-lock.json")); err != nil {
		missing("the Node.js SDKs are not installed")
	}
	return path
}

// runNode runs sdk.mjs with op and code, in on its stdin, and decodes its
// stdout into out.
func runNode(t testing.TB, op, code string, in, out any) {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node(t), "sdk.mjs", op, code)
	cmd.Dir = npmDir
	cmd.Stdin = bytes.NewReader(raw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node sdk.mjs %s %s: %v\n%s", op, code, err, stderr.Bytes())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node sdk.mjs %s %s printed %q: %v", op, code, stdout, err)
	}
}

// nodeVerdicts are the verdicts of code's Node.js SDK, holding secret, on
// each delivery, asked in one run of node.
func nodeVerdicts(t testing.TB, code, secret string, ds []delivery) []verdict {
	t.Helper()
	type request struct {
		Method     string      `json:"method"`
		URL        string      `json:"url"`
		Header     http.Header `json:"header"`
		Body       string      `json:"body"`
		ReceivedAt int64       `json:"receivedAt"`
	}
	in := struct {
		Secret   string    `json:"secret"`
		Requests []request `json:"requests"`
	}{Secret: secret}
	for _, d := range ds {
		in.Requests = append(in.Requests, request{d.r.Method, d.r.URL, d.r.Header, base64.StdEncoding.EncodeToString(d.r.Body), d.r.ReceivedAt.UnixMilli()})
	}
	var out []verdict
	runNode(t, "verify", code, in, &out)
	if len(out) != len(ds) {
		t.Fatalf("node sdk.mjs verify %s judged %d deliveries of %d", code, len(out), len(ds))
	}
	return out
}

// agreeNode is agree with code's Node.js SDK judging: the SDK holds the
// first of secrets, intake all of them.
func agreeNode(t *testing.T, code string, secrets []string, cfg provider.Config, ds []delivery) {
	t.Helper()
	judge(t, code, secrets, cfg, nodeVerdicts(t, code, secrets[0], ds), ds)
}

// nodeSigned is body as code's Node.js SDK signs it with secret at at,
// received at receivedAt.
func nodeSigned(t testing.TB, code, secret string, body []byte, at, receivedAt time.Time) *provider.Request {
	t.Helper()
	in := struct {
		Secret string `json:"secret"`
		Body   string `json:"body"`
		At     int64  `json:"at"`
	}{secret, string(body), at.UnixMilli()}
	var out struct {
		Header map[string]string `json:"header"`
		Body   string            `json:"body"`
	}
	runNode(t, "sign", code, in, &out)
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range out.Header {
		h.Set(k, v)
	}
	return received([]byte(out.Body), h, receivedAt)
}
