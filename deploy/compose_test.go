// Package deploy holds no code: its tests check the deployment files beside
// them (deploy/compose.yaml, the Helm chart in deploy/helm/intake) say
// what README promises.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of the compose format the checks read.
type composeFile struct {
	Services map[string]struct {
		Image string `yaml:"image"`
		Build struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Volumes     []string `yaml:"volumes"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		StopGracePeriod string `yaml:"stop_grace_period"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

func TestComposeRunsIntakeFromTheDockerfileOnPostgreSQL15(t *testing.T) {
	c := readCompose(t)
	pg, ok := c.Services["postgres"]
	if !ok || !strings.HasSuffix(pg.Image, "postgres:15") || len(pg.Healthcheck.Test) == 0 {
		t.Fatalf("postgres service: %+v", pg)
	}
	in, ok := c.Services["intake"]
	if !ok {
		t.Fatal("no intake service")
	}
	if _, err := os.Stat(filepath.Join(in.Build.Context, in.Build.Dockerfile)); err != nil {
		t.Fatalf("intake is built from %s/%s: %v", in.Build.Context, in.Build.Dockerfile, err)
	}
	if !strings.Contains(in.Environment["INTAKE_DB"], "@postgres:5432/") {
		t.Errorf("INTAKE_DB does not name the postgres service: %q", in.Environment["INTAKE_DB"])
	}
	if in.DependsOn["postgres"].Condition != "service_healthy" {
		t.Errorf("intake does not wait for a healthy postgres: %+v", in.DependsOn)
	}
	if strings.Join(in.Healthcheck.Test, " ") != "CMD /usr/local/bin/intake healthcheck" {
		t.Errorf("intake healthcheck: %v", in.Healthcheck.Test)
	}
}

func TestComposeRequiresTheMasterKeyAndStaffTokenFromTheEnvironment(t *testing.T) {
	in := readCompose(t).Services["intake"]
	for _, name := range []string{"INTAKE_MASTER_KEY", "INTAKE_ADMIN_TOKEN"} {
		if !regexp.MustCompile(`^\$\{` + name + `:\?[^}]+\}$`).MatchString(in.Environment[name]) {
			t.Errorf("%s = %q, want ${%s:?message}", name, in.Environment[name], name)
		}
	}
}

func TestComposeKeepsDataInNamedVolumesAndStopsAfterTheDrain(t *testing.T) {
	c := readCompose(t)
	for _, svc := range []string{"postgres", "intake"} {
		vols := c.Services[svc].Volumes
		if len(vols) == 0 {
			t.Errorf("%s has no volume", svc)
		}
		for _, v := range vols {
			name := strings.SplitN(v, ":", 2)[0]
			if _, ok := c.Volumes[name]; !ok {
				t.Errorf("%s mounts %q, which is not a named volume", svc, name)
			}
		}
	}
	in := c.Services["intake"]
	grace, err1 := time.ParseDuration(in.Environment["INTAKE_SHUTDOWN_GRACE"])
	stop, err2 := time.ParseDuration(in.StopGracePeriod)
	if err1 != nil || err2 != nil || stop <= grace {
		t.Errorf("stop_grace_period %q must exceed INTAKE_SHUTDOWN_GRACE %q", in.StopGracePeriod, in.Environment["INTAKE_SHUTDOWN_GRACE"])
	}
}

// tool finds a command-line tool the deployment checks need: CI (CI=true)
// installs it, so there it must be found; elsewhere its checks are skipped.
func tool(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (or set %s): .ci/run installs it", name, env)
	}
	t.Skipf("%s is not installed (or set %s)", name, env)
	return ""
}

// TestComposeFileValidatesWithDockerCompose has a compose implementation
// (Debian's docker-compose 1.29) validate and interpolate the file; it needs
// no container engine.
func TestComposeFileValidatesWithDockerCompose(t *testing.T) {
	dc := tool(t, "INTAKE_DOCKER_COMPOSE", "docker-compose")
	config := func(env ...string) (string, error) {
		cmd := exec.Command(dc, "--file", "compose.yaml", "config")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := config("INTAKE_MASTER_KEY="+strings.Repeat("ab", 32), "INTAKE_ADMIN_TOKEN=ist_test")
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	var resolved composeFile
	if err := yaml.Unmarshal([]byte(out), &resolved); err != nil {
		t.Fatalf("docker-compose config printed: %v\n%s", err, out)
	}
	if got := resolved.Services["intake"].Environment["INTAKE_ADMIN_TOKEN"]; got != "ist_test" {
		t.Errorf("INTAKE_ADMIN_TOKEN resolved to %q", got)
	}
	out, err = config("INTAKE_MASTER_KEY=", "INTAKE_ADMIN_TOKEN=ist_test")
	if err == nil || !strings.Contains(out, "set INTAKE_MASTER_KEY") {
		t.Errorf("without INTAKE_MASTER_KEY: %v\n%s", err, out)
	}
	out, err = config("INTAKE_MASTER_KEY="+strings.Repeat("ab", 32), "INTAKE_ADMIN_TOKEN=")
	if err == nil || !strings.Contains(out, "set INTAKE_ADMIN_TOKEN") {
		t.Errorf("without INTAKE_ADMIN_TOKEN: %v\n%s", err, out)
	}
}
