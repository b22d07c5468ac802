package deploy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/intakehq/intake/internal/seal"
)

const chart = "helm/intake"

// object is one rendered manifest, the fields the checks read.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct {
			Name       string `yaml:"name"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
		MaxUnavailable *int `yaml:"maxUnavailable"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
		RunAsUser    int  `yaml:"runAsUser"`
		FSGroup      int  `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	Containers []struct {
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		LivenessProbe  probe `yaml:"livenessProbe"`
		ReadinessProbe probe `yaml:"readinessProbe"`
		StartupProbe   probe `yaml:"startupProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
			RunAsNonRoot             bool  `yaml:"runAsNonRoot"`
			RunAsUser                int   `yaml:"runAsUser"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
		EmptyDir any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// rendered is one `helm template` of the chart, by kind.
type rendered map[string][]object

func (r rendered) one(t *testing.T, kind string) object {
	t.Helper()
	if len(r[kind]) != 1 {
		t.Fatalf("%d %s rendered, want 1", len(r[kind]), kind)
	}
	return r[kind][0]
}

// env returns the container's environment: values, and name/key of the
// Secret for those read from one.
func (o object) env() map[string]string {
	m := map[string]string{}
	for _, e := range o.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
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
	err := cmd.Run()
	if err != nil {
		return stderr.String(), err
	}
	return out.String(), nil
}

// template renders the chart with --set values and parses every manifest.
func template(t *testing.T, set ...string) rendered {
	t.Helper()
	args := []string{"template", "rel", chart, "--namespace", "hooks"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	r := rendered{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered manifests: %v\n%s", err, out)
		}
		if o.Kind != "" {
			r[o.Kind] = append(r[o.Kind], o)
		}
	}
	return r
}

var onPostgres = []string{"replicaCount=3", "postgres.enabled=true", "postgres.url=postgres://intake:pw@db:5432/intake",
	"serviceMonitor.enabled=true"}

func TestChartLintsWithDefaultAndPostgreSQLValues(t *testing.T) {
	for _, set := range [][]string{nil, onPostgres} {
		args := []string{"lint", "--strict", chart}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}

func TestChartRunsTheImageAsUser65532WithNothingWritableButItsVolumes(t *testing.T) {
	for _, set := range [][]string{nil, onPostgres} {
		pod := template(t, set...).one(t, "Deployment").Spec.Template.Spec
		if sc := pod.SecurityContext; !sc.RunAsNonRoot || sc.RunAsUser != 65532 || sc.FSGroup != 65532 {
			t.Errorf("%v: pod securityContext %+v", set, sc)
		}
		c := pod.Containers[0]
		sc := c.SecurityContext
		if !sc.RunAsNonRoot || sc.RunAsUser != 65532 || !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
			*sc.AllowPrivilegeEscalation || strings.Join(sc.Capabilities.Drop, ",") != "ALL" {
			t.Errorf("%v: container securityContext %+v", set, sc)
		}
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = true
		}
		if len(mounts) != 2 || !mounts["/data"] || !mounts["/tmp"] {
			t.Errorf("%v: mounts %+v, want /data and /tmp", set, c.VolumeMounts)
		}
		if c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
			t.Errorf("%v: resources %+v", set, c.Resources)
		}
		if strings.Join(c.Args, " ") != "serve" || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 {
			t.Errorf("%v: args %v ports %+v", set, c.Args, c.Ports)
		}
	}
}

func TestChartProbesHealthzForLivenessAndReadyzForReadiness(t *testing.T) {
	c := template(t).one(t, "Deployment").Spec.Template.Spec.Containers[0]
	port := c.Ports[0].Name
	for name, p := range map[string]struct {
		got  probe
		path string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/healthz"}} {
		if p.got.HTTPGet.Path != p.path || p.got.HTTPGet.Port != port {
			t.Errorf("%s probe %+v, want %s on port %s", name, p.got.HTTPGet, p.path, port)
		}
	}
}

func TestChartTerminationGraceOutlastsTheShutdownGrace(t *testing.T) {
	for _, grace := range []int{30, 120} {
		d := template(t, "shutdownGraceSeconds="+strconv.Itoa(grace)).one(t, "Deployment")
		flag, err := time.ParseDuration(d.env()["INTAKE_SHUTDOWN_GRACE"])
		if err != nil || flag != time.Duration(grace)*time.Second {
			t.Fatalf("shutdownGraceSeconds=%d: INTAKE_SHUTDOWN_GRACE %q", grace, d.env()["INTAKE_SHUTDOWN_GRACE"])
		}
		if tg := d.Spec.Template.Spec.TerminationGracePeriodSeconds; time.Duration(tg)*time.Second <= flag {
			t.Errorf("terminationGracePeriodSeconds %d does not outlast --shutdown-grace %s", tg, flag)
		}
	}
}

func TestChartDefaultsToOneReplicaOnTheEmbeddedStoreWithAVolumeAndAGeneratedKey(t *testing.T) {
	r := template(t)
	d := r.one(t, "Deployment")
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != "Recreate" {
		t.Errorf("replicas %d, strategy %q; want 1, Recreate (one process owns the store)", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	pvc := r.one(t, "PersistentVolumeClaim")
	var claim string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim != pvc.Metadata.Name {
		t.Errorf("/data is claim %q, the chart's claim is %q", claim, pvc.Metadata.Name)
	}
	if env := d.env(); env["INTAKE_DB"] != "" || env["INTAKE_DATA"] != "/data" {
		t.Errorf("embedded store: INTAKE_DB %q, INTAKE_DATA %q", env["INTAKE_DB"], env["INTAKE_DATA"])
	}
	secret := r.one(t, "Secret")
	if secret.Metadata.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("the Secret holding the master key is deleted with the release")
	}
	key, err := base64.StdEncoding.DecodeString(secret.Data["master-key"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seal.ParseKey(string(key)); err != nil {
		t.Errorf("the generated master key is not one intake accepts: %v", err)
	}
	if env := d.env(); env["INTAKE_MASTER_KEY"] != "secret:"+secret.Metadata.Name+"/master-key" ||
		env["INTAKE_ADMIN_TOKEN"] != "secret:"+secret.Metadata.Name+"/admin-token" {
		t.Errorf("master key and staff token are not read from the Secret: %v", env)
	}
	if len(r["PodDisruptionBudget"]) != 0 || len(r["ServiceMonitor"]) != 0 {
		t.Error("one replica rendered a PodDisruptionBudget, or a ServiceMonitor was rendered unasked")
	}
}

func TestChartRunsReplicasOnPostgreSQLWithTheURLFromASecretAndNoVolume(t *testing.T) {
	r := template(t, onPostgres...)
	d := r.one(t, "Deployment")
	if *d.Spec.Replicas != 3 || d.Spec.Strategy.Type != "RollingUpdate" {
		t.Errorf("replicas %d, strategy %q", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	secret := r.one(t, "Secret")
	if got := d.env()["INTAKE_DB"]; got != "secret:"+secret.Metadata.Name+"/database-url" {
		t.Errorf("INTAKE_DB is %q", got)
	}
	url, _ := base64.StdEncoding.DecodeString(secret.Data["database-url"])
	if string(url) != "postgres://intake:pw@db:5432/intake" {
		t.Errorf("the Secret's database-url is %q", url)
	}
	if len(r["PersistentVolumeClaim"]) != 0 {
		t.Error("a volume claim was rendered for the PostgreSQL store")
	}
	pdb := r.one(t, "PodDisruptionBudget")
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != 1 || !selects(pdb.Spec.Selector.MatchLabels, d) {
		t.Errorf("PodDisruptionBudget %+v", pdb.Spec)
	}
	svc := r.one(t, "Service")
	sm := r.one(t, "ServiceMonitor")
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Path != "/metrics" || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
		t.Errorf("ServiceMonitor endpoints %+v, Service ports %+v", sm.Spec.Endpoints, svc.Spec.Ports)
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Metadata.Labels[k] != v {
			t.Errorf("the ServiceMonitor does not select the Service: %s=%s", k, v)
		}
	}
}

// selects reports whether labels select the Deployment's pods.
func selects(labels map[string]string, d object) bool {
	for k, v := range labels {
		if d.Spec.Template.Metadata.Labels[k] != v {
			return false
		}
	}
	return len(labels) > 0
}

func TestChartReadsAnExistingSecretInsteadOfRenderingOne(t *testing.T) {
	r := template(t, "secrets.existingSecret=mine", "postgres.enabled=true", "postgres.existingSecret=db",
		"postgres.secretKey=url")
	if len(r["Secret"]) != 0 {
		t.Errorf("rendered %d Secrets beside existing ones", len(r["Secret"]))
	}
	env := r.one(t, "Deployment").env()
	if env["INTAKE_MASTER_KEY"] != "secret:mine/master-key" || env["INTAKE_ADMIN_TOKEN"] != "secret:mine/admin-token" ||
		env["INTAKE_DB"] != "secret:db/url" {
		t.Errorf("environment %v", env)
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
		args := []string{"template", "rel", chart}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: %v, want an error containing %q\n%s", c.set, err, c.want, out)
		}
	}
}
