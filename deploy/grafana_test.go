package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/pressure"
)

const (
	dashboardFile = "grafana/intake.json"
	// chartDashboard is the chart's copy of dashboardFile: Helm reads
	// only the files inside a chart.
	chartDashboard = chart + "/dashboards/intake.json"
	// datasourceVar is how every panel names its data source: the
	// dashboard's variable, not one Grafana's uid.
	datasourceVar = "${datasource}"
)

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []struct {
		Datasource *datasourceRef `json:"datasource"`
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
	} `json:"targets"`
	Panels  []panel `json:"panels"` // a collapsed row's
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels lists the dashboard's panels, rows' included, in order.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// query is one PromQL expression of the dashboard and where it is.
type query struct{ where, expr string }

// queries lists every PromQL expression: the panels' and the template
// variables' (label_values(selector, label) is read as its selector).
func (d dashboard) queries(t *testing.T) []query {
	t.Helper()
	var out []query
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, query{fmt.Sprintf("panel %d %q, query %s", p.ID, p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("variable %s: query %s", v.Name, v.Query)
			}
		}
		if m := labelValues.FindStringSubmatch(q.Query); m != nil {
			q.Query = m[1] + `{` + m[2] + `=""}`
		}
		out = append(out, query{"variable " + v.Name, q.Query})
	}
	return out
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

func TestGrafanaDashboardIsAValidDashboardOnADatasourceVariable(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q", d.UID, d.Title)
	}
	var dsVar bool
	for _, v := range d.Templating.List {
		switch {
		case v.Name == "datasource":
			var q string
			dsVar = v.Type == "datasource" && json.Unmarshal(v.Query, &q) == nil && q == "prometheus"
		case v.Datasource == nil || v.Datasource.UID != datasourceVar:
			t.Errorf("variable %s queries data source %+v, want %s", v.Name, v.Datasource, datasourceVar)
		}
	}
	if !dsVar {
		t.Error("no variable datasource of type datasource choosing a Prometheus")
	}
	ids := map[int]string{}
	var graphs int
	for _, p := range d.allPanels() {
		if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
			t.Errorf("panel %q has id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Title == "" || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d: title %q, gridPos %+v", p.ID, p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		graphs++
		if p.Datasource == nil || p.Datasource.UID != datasourceVar || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %d %q: datasource %+v, want the prometheus %s", p.ID, p.Title, p.Datasource, datasourceVar)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %d %q has no query", p.ID, p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && tg.Datasource.UID != datasourceVar {
				t.Errorf("panel %d %q, query %s: datasource %+v", p.ID, p.Title, tg.RefID, tg.Datasource)
			}
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %d %q: query %q with refId %q", p.ID, p.Title, tg.Expr, tg.RefID)
			}
			refs[tg.RefID] = true
		}
	}
	if graphs == 0 {
		t.Fatal("the dashboard has no panels")
	}
}

// family is a metric family intake exports: its type and labels.
type family struct {
	typ    dto.MetricType
	labels map[string]bool
}

// statsStore answers the store's gauges with one of each.
type statsStore struct{ intake.Store }

func (statsStore) Stats(context.Context, time.Time) (intake.Stats, error) {
	st := intake.Stats{Messages: map[intake.MessageState]int{}, Events: map[[2]string]int{}}
	for _, s := range intake.MessageStates {
		st.Messages[s] = 1
	}
	for _, s := range intake.EventStates {
		st.Events[[2]string{"github", string(s)}] = 1
	}
	return st, nil
}

var descLabels = regexp.MustCompile(`^Desc\{fqName: "[^"]+", .*variableLabels: \{([^}]*)\}\}$`)

// exported gathers every family intake serve can export, as serve
// registers them with every option on (per-consumer series, the replica,
// ingest pressure): each labelled family is given one series so it is
// gathered. intake_build_info, registered by package main, is not among
// them.
func exported(t *testing.T) map[string]family {
	t.Helper()
	m := metrics.NewWith(metrics.Options{PerConsumer: true})
	m.WatchReplication(func() metrics.Replication { return metrics.Replication{} })
	m.WatchStore(statsStore{}, intake.SystemClock{})
	m.WatchQuota(func() int64 { return 0 }, 0)
	m.WatchPressure(pressure.New(1))

	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		var c prometheus.Collector
		switch f := v.Field(i).Interface().(type) {
		case *prometheus.CounterVec, *prometheus.GaugeVec, *prometheus.HistogramVec, *prometheus.SummaryVec:
			if v.Field(i).IsNil() {
				continue
			}
			c = f.(prometheus.Collector)
		default:
			continue // gathered as it is
		}
		ch := make(chan *prometheus.Desc, 16)
		c.Describe(ch)
		close(ch)
		for desc := range ch {
			sub := descLabels.FindStringSubmatch(desc.String())
			if sub == nil {
				t.Fatalf("Metrics.%s: cannot read the labels of %s", v.Type().Field(i).Name, desc)
			}
			var values []string
			if sub[1] != "" {
				values = strings.Split(sub[1], ",") // any values: one series
			}
			switch c := c.(type) {
			case *prometheus.CounterVec:
				c.WithLabelValues(values...).Inc()
			case *prometheus.GaugeVec:
				c.WithLabelValues(values...).Inc()
			case *prometheus.HistogramVec:
				c.WithLabelValues(values...).Observe(0.01)
			case *prometheus.SummaryVec:
				c.WithLabelValues(values...).Observe(0.01)
			}
		}
	}
	gathered, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]family{}
	for _, f := range gathered {
		fam := family{typ: f.GetType(), labels: map[string]bool{}}
		for _, s := range f.Metric {
			for _, l := range s.Label {
				fam.labels[l.GetName()] = true
			}
		}
		out[f.GetName()] = fam
	}
	return out
}

// selector is a metric a query reads and the labels it matches on.
type selector struct {
	name   string
	labels []string
}

var (
	// Words that are PromQL's, not metrics: binary operators and
	// modifiers. by, without, on, ignoring, group_left and group_right
	// are followed by a list of labels, which is skipped.
	keywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
		"inf": true, "nan": true}
	grouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// selectors reads the metric selectors of a PromQL expression: every name
// not a function's, an aggregation's or a keyword, with the labels of its
// {…} matchers. Strings, ranges ([5m], [$__rate_interval]), numbers and
// Grafana's variables are skipped.
func selectors(expr string) ([]selector, error) {
	var out []selector
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || 'a' <= c|0x20 && c|0x20 <= 'z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		return i
	}
	skipString := func(i int) (int, error) {
		q := expr[i]
		for i++; i < len(expr); i++ {
			if expr[i] == '\\' && q != '`' {
				i++
			} else if expr[i] == q {
				return i + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string in %q", expr)
	}
	skipTo := func(i int, close byte) (int, error) {
		for ; i < len(expr); i++ {
			if expr[i] == close {
				return i + 1, nil
			}
		}
		return 0, fmt.Errorf("no %q in %q", close, expr)
	}
	last := -1 // the selector a '{' directly after it belongs to
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i, last = j, -1
		case c == '[':
			j, err := skipTo(i, ']')
			if err != nil {
				return nil, err
			}
			i, last = j, -1
		case c == '{':
			if last < 0 {
				return nil, fmt.Errorf("a selector with no metric name in %q", expr)
			}
			for i++; ; {
				i = skipSpace(i)
				if i >= len(expr) {
					return nil, fmt.Errorf("no '}' in %q", expr)
				}
				if expr[i] == '}' {
					i++
					break
				}
				j := i
				for j < len(expr) && isIdent(expr[j]) {
					j++
				}
				if j == i {
					return nil, fmt.Errorf("a label matcher at %q in %q", expr[i:], expr)
				}
				out[last].labels = append(out[last].labels, expr[i:j])
				i = skipSpace(j)
				for i < len(expr) && strings.IndexByte("=!~", expr[i]) >= 0 {
					i++
				}
				i = skipSpace(i)
				if i >= len(expr) || expr[i] != '"' && expr[i] != '\'' && expr[i] != '`' {
					return nil, fmt.Errorf("a label matcher's value at %q in %q", expr[i:], expr)
				}
				var err error
				if i, err = skipString(i); err != nil {
					return nil, err
				}
				if i = skipSpace(i); i < len(expr) && expr[i] == ',' {
					i++
				}
			}
			last = -1
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				j, err := skipTo(i, '}')
				if err != nil {
					return nil, err
				}
				i = j
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			last = -1
		case '0' <= c && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
			last = -1
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word, next := expr[i:j], skipSpace(j)
			i, last = j, -1
			switch {
			case grouping[strings.ToLower(word)]:
				if next < len(expr) && expr[next] == '(' {
					k, err := skipTo(next, ')')
					if err != nil {
						return nil, err
					}
					i = k
				}
			case keywords[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// a function or an aggregation
			case grouping[strings.ToLower(wordAt(expr, next))]:
				// an aggregation: sum by (le) (…)
			default:
				out = append(out, selector{name: word})
				last = len(out) - 1
				i = next
			}
		default:
			i, last = i+1, -1
		}
	}
	return out, nil
}

// wordAt is the identifier at i in s, or "".
func wordAt(s string, i int) string {
	j := i
	for j < len(s) && (s[j] == '_' || 'a' <= s[j]|0x20 && s[j]|0x20 <= 'z') {
		j++
	}
	return s[i:j]
}

func TestSelectorsReadsTheMetricsOfAQuery(t *testing.T) {
	for expr, want := range map[string]string{
		`histogram_quantile(0.99, sum by (consumer_id, le) (rate(a_bucket{consumer_id=~"$consumer"}[$__rate_interval])))`: `a_bucket{consumer_id}`,
		`sum(rate(b_total{x="}", y!~'a"b'}[5m] offset 1h)) by (job) / on (job) group_left(z) c or vector(0)`:              `b_total{x,y} c`,
		`time() - max(d > 0) and  e {f = "1"}`: `d e{f}`,
		`1e3 * ${var} + 0.5 * g_seconds_sum`:   `g_seconds_sum`,
	} {
		sels, err := selectors(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		var got []string
		for _, s := range sels {
			if len(s.labels) > 0 {
				got = append(got, s.name+"{"+strings.Join(s.labels, ",")+"}")
			} else {
				got = append(got, s.name)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
	for _, bad := range []string{`{__name__="x"}`, `x{y}`, `x{y="z"`, `x[5m`, `x{y="z}`} {
		if _, err := selectors(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// known checks one selector against the families intake exports: a
// histogram is read through its _bucket, _sum or _count series, and every
// label matched must be one the family has (le for a _bucket).
func known(fams map[string]family, s selector) error {
	f, ok := fams[s.name]
	labels := f.labels
	switch {
	case ok && (f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_SUMMARY):
		return fmt.Errorf("%s is a %s: read %s_bucket, _sum or _count", s.name, f.typ, s.name)
	case !ok:
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base, cut := strings.CutSuffix(s.name, suffix)
			h, found := fams[base]
			if cut && found && (h.typ == dto.MetricType_HISTOGRAM || suffix != "_bucket" && h.typ == dto.MetricType_SUMMARY) {
				ok, labels = true, h.labels
				if suffix == "_bucket" {
					labels = map[string]bool{"le": true}
					for l := range h.labels {
						labels[l] = true
					}
				}
			}
		}
	}
	if !ok {
		return fmt.Errorf("intake exports no %s", s.name)
	}
	for _, l := range s.labels {
		if !labels[l] {
			return fmt.Errorf("%s has no label %s", s.name, l)
		}
	}
	return nil
}

func TestGrafanaDashboardQueriesOnlyMetricsIntakeExports(t *testing.T) {
	fams := exported(t)
	// The families the dashboard relies on are among those gathered: a
	// registry that gathered nothing would let no query pass.
	for _, name := range []string{"intake_consumer_deliveries_total", "intake_delivery_seconds", "intake_events",
		"intake_replication_lag_seconds", "intake_ingest_waiting"} {
		if _, ok := fams[name]; !ok {
			t.Fatalf("%s was not gathered", name)
		}
	}
	if fams["intake_events"].typ != dto.MetricType_GAUGE || !fams["intake_events"].labels["provider"] ||
		fams["intake_process_seconds"].typ != dto.MetricType_HISTOGRAM {
		t.Fatalf("gathered families' types or labels are wrong: %+v %+v", fams["intake_events"], fams["intake_process_seconds"])
	}
	used := map[string]bool{}
	for _, q := range readDashboard(t).queries(t) {
		sels, err := selectors(q.expr)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if len(sels) == 0 {
			t.Errorf("%s reads no metric: %s", q.where, q.expr)
		}
		for _, s := range sels {
			if err := known(fams, s); err != nil {
				t.Errorf("%s: %v\n\t%s", q.where, err, q.expr)
			}
			used[s.name] = true
		}
	}
	t.Logf("the dashboard reads %d series names of %d families exported", len(used), len(fams))
}

func TestChartDashboardIsACopyOfTheGrafanaDashboard(t *testing.T) {
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(chartDashboard)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("deploy/%s differs from deploy/%s: cp deploy/%[2]s deploy/%[1]s", chartDashboard, dashboardFile)
	}
}

// monitoringCompose is the part of compose.yaml the Grafana checks read.
type monitoringCompose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Profiles    []string          `yaml:"profiles"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
}

// mounts maps a service's bind mounts' targets to their sources, relative
// to deploy/; named volumes are left out.
func mounts(t *testing.T, volumes []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Errorf("volume %q names no target", v)
			continue
		}
		if src, bind := strings.CutPrefix(parts[0], "./"); bind {
			if _, err := os.Stat(src); err != nil {
				t.Errorf("%s is mounted from a file that is not there: %v", parts[1], err)
			}
			m[parts[1]] = src
		}
	}
	return m
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func TestComposeProvisionsGrafanaWithTheDashboardOnPrometheusScrapingIntake(t *testing.T) {
	var c monitoringCompose
	readYAML(t, "compose.yaml", &c)
	prom, okP := c.Services["prometheus"]
	graf, okG := c.Services["grafana"]
	if !okP || !okG {
		t.Fatalf("compose.yaml has no prometheus or grafana service")
	}
	for name, svc := range map[string][]string{"prometheus": prom.Profiles, "grafana": graf.Profiles} {
		if !slices.Equal(svc, []string{"monitoring"}) {
			t.Errorf("%s: profiles %v, want [monitoring]", name, svc)
		}
	}

	// Prometheus scrapes intake's /metrics on the port intake serves.
	pm := mounts(t, prom.Volumes)
	var configFile string
	for _, arg := range prom.Command {
		if f, ok := strings.CutPrefix(arg, "--config.file="); ok {
			configFile = f
		}
	}
	dir, ok := pm[path.Dir(configFile)]
	if !ok {
		t.Fatalf("prometheus reads %q, which no volume mounts: %v", configFile, prom.Volumes)
	}
	var pcfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, path.Join(dir, path.Base(configFile)), &pcfg)
	if len(pcfg.ScrapeConfigs) != 1 || pcfg.ScrapeConfigs[0].MetricsPath != "/metrics" || len(pcfg.ScrapeConfigs[0].StaticConfigs) != 1 ||
		!slices.Equal(pcfg.ScrapeConfigs[0].StaticConfigs[0].Targets, []string{"intake:8080"}) {
		t.Errorf("prometheus scrapes %+v, want intake:8080/metrics", pcfg.ScrapeConfigs)
	}
	for _, f := range pcfg.RuleFiles {
		if _, err := os.Stat(path.Join(dir, f)); err != nil {
			t.Errorf("prometheus rule file: %v", err)
		}
	}

	// Grafana's provisioning: its data source is that Prometheus, and
	// its dashboards provider loads the mounted dashboard file.
	gm := mounts(t, graf.Volumes)
	prov, ok := gm["/etc/grafana/provisioning"]
	if !ok {
		t.Fatalf("grafana mounts no /etc/grafana/provisioning: %v", graf.Volumes)
	}
	var ds struct {
		Datasources []struct {
			Type      string `yaml:"type"`
			URL       string `yaml:"url"`
			IsDefault bool   `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	readYAML(t, path.Join(prov, "datasources", "prometheus.yaml"), &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" ||
		!ds.Datasources[0].IsDefault {
		t.Errorf("grafana's data sources: %+v", ds.Datasources)
	}
	var dp struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, path.Join(prov, "dashboards", "intake.yaml"), &dp)
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" {
		t.Fatalf("grafana's dashboard providers: %+v", dp.Providers)
	}
	var loaded []string
	for target, source := range gm {
		if strings.HasPrefix(target, dp.Providers[0].Options.Path+"/") {
			loaded = append(loaded, source)
		}
	}
	if !slices.Equal(loaded, []string{dashboardFile}) {
		t.Errorf("grafana's provider loads %s, where compose mounts %v; want only %s", dp.Providers[0].Options.Path, loaded, dashboardFile)
	}
	if home := graf.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; gm[home] != dashboardFile {
		t.Errorf("grafana's home dashboard %q is not %s", home, dashboardFile)
	}
}

func TestChartRendersTheDashboardInAConfigMapForGrafanasSidecarWhenAsked(t *testing.T) {
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if r := template(t); len(r.configMaps) != 0 {
		t.Errorf("default values rendered %d ConfigMaps", len(r.configMaps))
	}
	cm := one(t, "ConfigMap", template(t, "grafana.dashboard.enabled=true").configMaps)
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "" {
		t.Errorf("ConfigMap labels %v, namespace %q", cm.Labels, cm.Namespace)
	}
	// The block scalar (|-) drops the file's last newline.
	if got, want := cm.Data["intake.json"], strings.TrimSuffix(string(want), "\n"); got != want {
		t.Errorf("the ConfigMap's intake.json is not %s (%d bytes, want %d)", dashboardFile, len(got), len(want))
	}
	cm = one(t, "ConfigMap", template(t, "grafana.dashboard.enabled=true", "grafana.dashboard.namespace=monitoring",
		"grafana.dashboard.label=dashboards", "grafana.dashboard.labelValue=intake",
		"grafana.dashboard.annotations.grafana_folder=intake").configMaps)
	if cm.Namespace != "monitoring" || cm.Labels["dashboards"] != "intake" || cm.Labels["grafana_dashboard"] != "" ||
		cm.Annotations["grafana_folder"] != "intake" {
		t.Errorf("namespace %q, labels %v, annotations %v", cm.Namespace, cm.Labels, cm.Annotations)
	}
}

// TestAlertRulesReadOnlyMetricsIntakeExports: every alert rule shipped in
// deploy/prometheus/alerts.yml reads metrics intake exports, with labels
// they have; a rule on a metric that is gone would never fire.
func TestAlertRulesReadOnlyMetricsIntakeExports(t *testing.T) {
	fams := exported(t)
	b, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	rules := 0
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			rules++
			sels, err := selectors(r.Expr)
			if err != nil || len(sels) == 0 {
				t.Errorf("alert %s: %v (reads %d metrics): %s", r.Alert, err, len(sels), r.Expr)
				continue
			}
			for _, s := range sels {
				if err := known(fams, s); err != nil {
					t.Errorf("alert %s: %v\n\t%s", r.Alert, err, r.Expr)
				}
			}
		}
	}
	if rules == 0 {
		t.Fatal("alerts.yml holds no rules")
	}
}
