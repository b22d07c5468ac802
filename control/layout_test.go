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

// The transports link no broker's client (DESIGN §24): the control plane
// checks a broker url without one, and only serve's wiring, through
// delivery/broker, publishes. And neither the worker nor the router links
// the other, nor fanout either of them: they meet at the hand-off and the
// fanout.Judger serve builds (DESIGN §7, §24).
func TestTheTransportsLinkNoBrokerClientAndTheWorkerAndRouterNotEachOther(t *testing.T) {
	const module = "github.com/intakehq/intake/"
	deps := func(pkgs ...string) []string {
		t.Helper()
		args := []string{"list", "-deps"}
		for _, p := range pkgs {
			args = append(args, module+p)
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %v: %v\n%s", pkgs, err, out)
		}
		return strings.Fields(string(out))
	}
	clients := []string{module + "delivery/broker", "github.com/twmb/franz-go", "github.com/nats-io/",
		"github.com/rabbitmq/amqp091-go", "github.com/redis/go-redis", "github.com/aws/aws-sdk-go-v2"}
	transports := deps("api", "console")
	if !slices.Contains(transports, module+"control") {
		t.Fatalf("go list -deps api console gave %d packages, none the control plane: it read something else", len(transports))
	}
	for _, dep := range transports {
		for _, c := range clients {
			if strings.HasPrefix(dep, c) {
				t.Errorf("api or console links %s: a transport links no broker's client", dep)
			}
		}
	}
	if !slices.ContainsFunc(deps("delivery/broker"), func(d string) bool { return strings.HasPrefix(d, "github.com/twmb/franz-go") }) {
		t.Fatal("delivery/broker links no Kafka client: the names above are not where the clients are")
	}
	for _, pkg := range []string{"worker", "router", "fanout"} {
		linked := deps(pkg)
		for _, other := range []string{"worker", "router"} {
			if other != pkg && slices.Contains(linked, module+other) {
				t.Errorf("%s links %s: the worker and the router meet at the hand-off and in fanout, never in each other", pkg, other)
			}
		}
		if pkg != "fanout" && !slices.Contains(linked, module+"fanout") {
			t.Errorf("%s does not link fanout: who gets an event is judged there, for the worker and the router alike", pkg)
		}
	}
}
