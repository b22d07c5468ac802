package deploy

import (
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/intakehq/intake/internal/seal"
)

const chart = "helm/intake"

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// the chart renders (its Go types live in the operator's own module).
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// rendered is one `helm template` of the chart, decoded into the Kubernetes
// API's own types.
type rendered struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	secrets     []corev1.Secret
	claims      []corev1.PersistentVolumeClaim
	budgets     []policyv1.PodDisruptionBudget
	monitors    []serviceMonitor
	configMaps  []corev1.ConfigMap
}

func one[T any](t *testing.T, kind string, objs []T) T {
	t.Helper()
	if len(objs) != 1 {
		t.Fatalf("%d %s rendered, want 1", len(objs), kind)
	}
	return objs[0]
}

func (r rendered) deployment(t *testing.T) appsv1.Deployment {
	return one(t, "Deployment", r.deployments)
}

// container is the Deployment's only container.
func (r rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := r.deployment(t).Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0]
}

// env returns the container's environment: values, and "secret:name/key"
// for those read from a Secret.
func (r rendered) env(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, e := range r.container(t).Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			m[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		} else {
			m[e.Name] = e.Value
		}
	}
	return m
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := tool(t, "INTAKE_HELM", "helm")
	var out, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String(), err
	}
	return out.String(), nil
}

func withValues(args []string, set []string) []string {
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

var separator = regexp.MustCompile(`(?m)^---$`)

// template renders the chart with --set values and decodes every manifest
// strictly: a field the Kubernetes API does not know fails the test.
func template(t *testing.T, set ...string) rendered {
	t.Helper()
	args := withValues([]string{"template", "rel", chart, "--namespace", "hooks"}, set)
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	var r rendered
	for _, doc := range separator.Split(out, -1) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rendered manifest: %v\n%s", err, doc)
		}
		var target any
		switch meta.Kind {
		case "":
			continue
		case "Deployment":
			r.deployments = append(r.deployments, appsv1.Deployment{})
			target = &r.deployments[len(r.deployments)-1]
		case "Service":
			r.services = append(r.services, corev1.Service{})
			target = &r.services[len(r.services)-1]
		case "Secret":
			r.secrets = append(r.secrets, corev1.Secret{})
			target = &r.secrets[len(r.secrets)-1]
		case "PersistentVolumeClaim":
			r.claims = append(r.claims, corev1.PersistentVolumeClaim{})
			target = &r.claims[len(r.claims)-1]
		case "PodDisruptionBudget":
			r.budgets = append(r.budgets, policyv1.PodDisruptionBudget{})
			target = &r.budgets[len(r.budgets)-1]
		case "ServiceMonitor":
			r.monitors = append(r.monitors, serviceMonitor{})
			target = &r.monitors[len(r.monitors)-1]
		case "ConfigMap":
			r.configMaps = append(r.configMaps, corev1.ConfigMap{})
			target = &r.configMaps[len(r.configMaps)-1]
		default:
			t.Fatalf("the chart rendered a %s, which these tests do not know", meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), target); err != nil {
			t.Errorf("%s is not a valid %s: %v", meta.Kind, meta.Kind, err)
		}
	}
	return r
}

var onPostgres = []string{"replicaCount=3", "postgres.enabled=true", "postgres.url=postgres://intake:pw@db:5432/intake",
	"serviceMonitor.enabled=true", "grafana.dashboard.enabled=true"}

func TestChartLintsWithDefaultAndPostgreSQLValues(t *testing.T) {
	for _, set := range [][]string{nil, onPostgres} {
		args := withValues([]string{"lint", "--strict", chart}, set)
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}

func TestChartRunsTheImageAsUser65532WithNothingWritableButItsVolumes(t *testing.T) {
	for _, set := range [][]string{nil, onPostgres} {
		r := template(t, set...)
		pod := r.deployment(t).Spec.Template.Spec
		if sc := pod.SecurityContext; sc == nil || !isTrue(sc.RunAsNonRoot) || !is(sc.RunAsUser, 65532) || !is(sc.FSGroup, 65532) {
			t.Errorf("%v: pod securityContext %+v", set, pod.SecurityContext)
		}
		c := r.container(t)
		sc := c.SecurityContext
		if sc == nil || !isTrue(sc.RunAsNonRoot) || !is(sc.RunAsUser, 65532) || !isTrue(sc.ReadOnlyRootFilesystem) ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%v: container securityContext %+v", set, sc)
		}
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = true
		}
		if len(mounts) != 2 || !mounts["/data"] || !mounts["/tmp"] {
			t.Errorf("%v: mounts %+v, want /data and /tmp", set, c.VolumeMounts)
		}
		if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%v: resources %+v", set, c.Resources)
		}
		if strings.Join(c.Args, " ") != "serve" || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 {
			t.Errorf("%v: args %v ports %+v", set, c.Args, c.Ports)
		}
	}
}

func isTrue(b *bool) bool          { return b != nil && *b }
func is(n *int64, want int64) bool { return n != nil && *n == want }

func TestChartProbesHealthzForLivenessAndReadyzForReadiness(t *testing.T) {
	c := template(t).container(t)
	for name, p := range map[string]struct {
		got  *corev1.Probe
		path string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/healthz"}} {
		if p.got == nil || p.got.HTTPGet == nil || p.got.HTTPGet.Path != p.path || p.got.HTTPGet.Port.String() != c.Ports[0].Name {
			t.Errorf("%s probe %+v, want %s on port %s", name, p.got, p.path, c.Ports[0].Name)
		}
	}
}

func TestChartTerminationGraceOutlastsTheShutdownGrace(t *testing.T) {
	for _, grace := range []int{30, 120} {
		r := template(t, "shutdownGraceSeconds="+strconv.Itoa(grace))
		flag, err := time.ParseDuration(r.env(t)["INTAKE_SHUTDOWN_GRACE"])
		if err != nil || flag != time.Duration(grace)*time.Second {
			t.Fatalf("shutdownGraceSeconds=%d: INTAKE_SHUTDOWN_GRACE %q", grace, r.env(t)["INTAKE_SHUTDOWN_GRACE"])
		}
		tg := r.deployment(t).Spec.Template.Spec.TerminationGracePeriodSeconds
		if tg == nil || time.Duration(*tg)*time.Second <= flag {
			t.Errorf("terminationGracePeriodSeconds %v does not outlast --shutdown-grace %s", tg, flag)
		}
	}
}

func TestChartDefaultsToOneReplicaOnTheEmbeddedStoreWithAVolumeAndAGeneratedKey(t *testing.T) {
	r := template(t)
	d := r.deployment(t)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %v, strategy %q; want 1, Recreate (one process owns the store)", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	pvc := one(t, "PersistentVolumeClaim", r.claims)
	var claim string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim != pvc.Name {
		t.Errorf("/data is claim %q, the chart's claim is %q", claim, pvc.Name)
	}
	env := r.env(t)
	if env["INTAKE_DB"] != "" || env["INTAKE_DATA"] != "/data" {
		t.Errorf("embedded store: INTAKE_DB %q, INTAKE_DATA %q", env["INTAKE_DB"], env["INTAKE_DATA"])
	}
	secret := one(t, "Secret", r.secrets)
	if secret.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("the Secret holding the master key is deleted with the release")
	}
	if _, err := seal.ParseKey(string(secret.Data["master-key"])); err != nil {
		t.Errorf("the generated master key is not one intake accepts: %v", err)
	}
	if !strings.HasPrefix(string(secret.Data["admin-token"]), "ist_") {
		t.Errorf("generated staff token %q", secret.Data["admin-token"])
	}
	if env["INTAKE_MASTER_KEY"] != "secret:"+secret.Name+"/master-key" || env["INTAKE_ADMIN_TOKEN"] != "secret:"+secret.Name+"/admin-token" {
		t.Errorf("master key and staff token are not read from the Secret: %v", env)
	}
	if len(r.budgets) != 0 || len(r.monitors) != 0 || len(r.configMaps) != 0 {
		t.Error("one replica rendered a PodDisruptionBudget, or a ServiceMonitor or the dashboard's ConfigMap was rendered unasked")
	}
}

func TestChartRunsReplicasOnPostgreSQLWithTheURLFromASecretAndNoVolume(t *testing.T) {
	r := template(t, onPostgres...)
	d := r.deployment(t)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("replicas %v, strategy %q", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	secret := one(t, "Secret", r.secrets)
	if got := r.env(t)["INTAKE_DB"]; got != "secret:"+secret.Name+"/database-url" {
		t.Errorf("INTAKE_DB is %q", got)
	}
	if got := string(secret.Data["database-url"]); got != "postgres://intake:pw@db:5432/intake" {
		t.Errorf("the Secret's database-url is %q", got)
	}
	if len(r.claims) != 0 {
		t.Error("a volume claim was rendered for the PostgreSQL store")
	}
	pdb := one(t, "PodDisruptionBudget", r.budgets)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || !selects(pdb.Spec.Selector, d) {
		t.Errorf("PodDisruptionBudget %+v", pdb.Spec)
	}
	svc := one(t, "Service", r.services)
	if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d) {
		t.Errorf("the Service selects %v, not the Deployment's pods", svc.Spec.Selector)
	}
	sm := one(t, "ServiceMonitor", r.monitors)
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Path != "/metrics" || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
		t.Errorf("ServiceMonitor endpoints %+v, Service ports %+v", sm.Spec.Endpoints, svc.Spec.Ports)
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor does not select the Service: %s=%s", k, v)
		}
	}
}

// selects reports whether sel selects the Deployment's pods.
func selects(sel *metav1.LabelSelector, d appsv1.Deployment) bool {
	if sel == nil || len(sel.MatchLabels) == 0 {
		return false
	}
	for k, v := range sel.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			return false
		}
	}
	return true
}

func TestChartReadsAnExistingSecretInsteadOfRenderingOne(t *testing.T) {
	r := template(t, "secrets.existingSecret=mine", "postgres.enabled=true", "postgres.existingSecret=db",
		"postgres.secretKey=url")
	if len(r.secrets) != 0 {
		t.Errorf("rendered %d Secrets beside existing ones", len(r.secrets))
	}
	env := r.env(t)
	if env["INTAKE_MASTER_KEY"] != "secret:mine/master-key" || env["INTAKE_ADMIN_TOKEN"] != "secret:mine/admin-token" ||
		env["INTAKE_DB"] != "secret:db/url" {
		t.Errorf("environment %v", env)
	}
}

func TestChartPassesTheConsumerAddressPolicyToServe(t *testing.T) {
	if env := template(t).env(t); env["INTAKE_CONSUMER_DENY"] != "" || env["INTAKE_CONSUMER_ALLOW"] != "" {
		t.Errorf("default values set a policy: %v", env)
	}
	env := template(t, "consumerPolicy.deny={10.0.0.0/8,fc00::/7}", "consumerPolicy.allow={10.1.0.0/16}").env(t)
	if env["INTAKE_CONSUMER_DENY"] != "10.0.0.0/8,fc00::/7" || env["INTAKE_CONSUMER_ALLOW"] != "10.1.0.0/16" {
		t.Errorf("INTAKE_CONSUMER_DENY %q, INTAKE_CONSUMER_ALLOW %q", env["INTAKE_CONSUMER_DENY"], env["INTAKE_CONSUMER_ALLOW"])
	}
}

func TestChartRefusesValuesThatCannotRun(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicaCount=3"}, "/postgres/enabled"},
		{[]string{"postgres.enabled=true"}, "postgres.enabled needs postgres.url or postgres.existingSecret"},
		{[]string{"postgres.url=postgres://db/intake"}, "postgres.enabled is false"},
		{[]string{"secrets.existingSecret=mine", "secrets.masterKey=" + strings.Repeat("ab", 32)}, "not both"},
		{[]string{"secrets.masterKey=short"}, "/secrets/masterKey"},
		{[]string{"replicas=3"}, "additional properties 'replicas' not allowed"},
	} {
		args := withValues([]string{"template", "rel", chart}, c.set)
		out, err := helm(t, args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: %v, want an error containing %q\n%s", c.set, err, c.want, out)
		}
	}
}
