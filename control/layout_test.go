package control_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The admin API and the console are transports: they reach the store, the
// sealer and the consumers only through the control plane, and show what it
// gives them as it gives it, so neither imports redaction, a store, the
// sealer or delivery of its own.
func TestTheTransportsImportNoRuleTheControlPlaneApplies(t *testing.T) {
	const module = "github.com/intakehq/intake/"
	banned := []string{"internal/redact", "internal/seal", "delivery", "store/sqlite", "store/postgres"}
	for _, pkg := range []string{"api", "console"} {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		imports := strings.Fields(string(out))
		if !slices.Contains(imports, module+"control") {
			t.Fatalf("%s imports %v: not the control plane, so go list read something else", pkg, imports)
		}
		for _, b := range banned {
			if slices.Contains(imports, module+b) {
				t.Errorf("%s imports %s: a transport applies what the control plane gives it, never a rule of its own", pkg, b)
			}
		}
	}
}
