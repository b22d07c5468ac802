package inboxcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// inboxDir is the inbox module's directory, from this package's.
const inboxDir = "../../inbox"

// Applications import the inbox without intake's dependencies: its module
// requires nothing (nor replaces, nor names a toolchain or tool), and its
// packages, their tests included, import only the standard library and
// one another.
func TestTheInboxModuleNeedsOnlyTheStandardLibrary(t *testing.T) {
	var mod struct {
		Module    struct{ Path string }
		Go        string
		Toolchain string
		Require   []json.RawMessage
		Replace   []json.RawMessage
		Exclude   []json.RawMessage
		Tool      []json.RawMessage
		Ignore    []json.RawMessage
	}
	if err := json.Unmarshal(goCommand(t, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Module.Path != "github.com/intakehq/intake/inbox" {
		t.Fatalf("%s/go.mod is module %q", inboxDir, mod.Module.Path)
	}
	for what, n := range map[string]int{"require": len(mod.Require), "replace": len(mod.Replace), "exclude": len(mod.Exclude),
		"tool": len(mod.Tool), "ignore": len(mod.Ignore)} {
		if n > 0 {
			t.Errorf("%s/go.mod has %d %s directives; the inbox needs only the standard library", inboxDir, n, what)
		}
	}
	if mod.Toolchain != "" {
		t.Errorf("%s/go.mod names toolchain %s", inboxDir, mod.Toolchain)
	}

	dec := json.NewDecoder(bytes.NewReader(goCommand(t, "list", "-deps", "-test", "-json=ImportPath,Standard,Module,Error,DepsErrors", "./...")))
	own := 0
	for {
		var p struct {
			ImportPath string
			Standard   bool
			Module     *struct{ Path string }
			Error      *struct{ Err string }
			DepsErrors []struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch {
		case p.Error != nil:
			t.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		case len(p.DepsErrors) > 0:
			t.Errorf("%s: %s", p.ImportPath, p.DepsErrors[0].Err)
		case p.Standard:
		case p.Module != nil && p.Module.Path == mod.Module.Path:
			own++
		default:
			t.Errorf("the inbox module's packages or tests need %s, outside the standard library", p.ImportPath)
		}
	}
	if own < 2 {
		t.Fatalf("listed %d packages of the inbox module (the package and its tests at least)", own)
	}
}

// goCommand runs the go command in the inbox module and returns its
// output.
func goCommand(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = inboxDir
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
