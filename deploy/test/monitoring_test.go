package deploytest

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The metric names in the rules and the dashboard are checked against a real driver's /metrics by
// the driver's MonitoringAssetsTest (Java); these tests check how the pieces fit Kubernetes,
// Prometheus and Grafana.

const monitoring = "overlays/monitoring"

// The PodMonitor finds the hearth pods and scrapes the port the driver serves its metrics on.
func TestPodMonitorScrapesTheDriversMetricsPort(t *testing.T) {
	b := build(t, monitoring)
	ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
	pm := one[*monitoringv1.PodMonitor](t, b, "hearth-node")
	selector, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		t.Fatalf("PodMonitor selector: %v", err)
	}
	if !selector.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("PodMonitor selector %v does not match the pods' labels %v", selector, ds.Spec.Template.Labels)
	}
	if pm.Namespace != ds.Namespace {
		t.Errorf("PodMonitor in %q, pods in %q (a PodMonitor selects pods of its own namespace)", pm.Namespace, ds.Namespace)
	}
	hearth := ds.Spec.Template.Spec.Containers[0]
	metricsPort := ""
	for _, arg := range hearth.Args {
		if v, ok := strings.CutPrefix(arg, "--metrics-address="); ok {
			metricsPort = v[strings.LastIndex(v, ":")+1:]
		}
	}
	if len(pm.Spec.PodMetricsEndpoints) == 0 {
		t.Fatal("the PodMonitor has no endpoint")
	}
	for _, ep := range pm.Spec.PodMetricsEndpoints {
		if ep.Port == nil {
			t.Errorf("endpoint %+v names no port", ep)
			continue
		}
		i := slices.IndexFunc(hearth.Ports, func(p corev1.ContainerPort) bool { return p.Name == *ep.Port })
		if i < 0 {
			t.Errorf("endpoint port %q is not a port of the hearth container", *ep.Port)
			continue
		}
		if got := strconv.Itoa(int(hearth.Ports[i].ContainerPort)); got != metricsPort {
			t.Errorf("endpoint port %q is %s, the driver serves metrics on %s", *ep.Port, got, metricsPort)
		}
		if ep.Path != "/metrics" {
			t.Errorf("endpoint path %q", ep.Path)
		}
	}
}

// The alerts on `up` match the job the PodMonitor gives its targets: the value of the pod label
// that its jobLabel names.
func TestAlertRulesMatchThePodMonitorsJob(t *testing.T) {
	b := build(t, monitoring)
	ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
	pm := one[*monitoringv1.PodMonitor](t, b, "hearth-node")
	job, ok := ds.Spec.Template.Labels[pm.Spec.JobLabel]
	if !ok {
		t.Fatalf("the pods have no label %q for the PodMonitor's jobLabel", pm.Spec.JobLabel)
	}
	matcher := regexp.MustCompile(`\bjob\s*=~?\s*"([^"]*)"`)
	up := 0
	for _, rule := range rules(t, b) {
		for _, m := range matcher.FindAllStringSubmatch(rule.Expr.String(), -1) {
			if m[1] != job {
				t.Errorf("%s: job %q, the PodMonitor's targets have job %q", rule.Alert, m[1], job)
			}
		}
		if strings.Contains(rule.Expr.String(), "up{") {
			up++
		}
	}
	if up == 0 {
		t.Error("no alert on up{...}: nothing tells that a driver cannot be scraped")
	}
}

// Each alert has a unique name, a severity an Alertmanager route can use, and a summary and a
// description whose templates Prometheus can expand.
func TestEveryAlertSaysWhatAndHowBad(t *testing.T) {
	b := build(t, monitoring)
	seen := map[string]bool{}
	for _, rule := range rules(t, b) {
		if rule.Alert == "" || !strings.HasPrefix(rule.Alert, "Hearth") || seen[rule.Alert] {
			t.Errorf("alert name %q: want a unique name starting with Hearth", rule.Alert)
		}
		seen[rule.Alert] = true
		if strings.TrimSpace(rule.Expr.String()) == "" {
			t.Errorf("%s: no expr", rule.Alert)
		}
		if s := rule.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q", rule.Alert, s)
		}
		if rule.For != nil {
			if _, err := time.ParseDuration(string(*rule.For)); err != nil {
				t.Errorf("%s: for %q: %v", rule.Alert, *rule.For, err)
			}
		}
		for _, key := range []string{"summary", "description"} {
			text := rule.Annotations[key]
			if strings.TrimSpace(text) == "" {
				t.Errorf("%s: no %s", rule.Alert, key)
				continue
			}
			if err := expandLikePrometheus(text); err != nil {
				t.Errorf("%s: %s: %v", rule.Alert, key, err)
			}
		}
	}
	if len(seen) < 5 {
		t.Errorf("%d alerts; want at least pool nearly full, pool unhealthy, not ready, RPC errors, driver down", len(seen))
	}
}

// The dashboard's ConfigMap carries dashboard.json as it is in the repository, with the label
// Grafana's sidecar looks for, and the JSON is a dashboard whose every query goes to the chosen
// Prometheus data source.
func TestDashboardIsAGrafanaDashboardForTheSidecar(t *testing.T) {
	b := build(t, monitoring)
	cm := one[*corev1.ConfigMap](t, b, "hearth-dashboard")
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("labels %v: Grafana's sidecar looks for grafana_dashboard=1", cm.Labels)
	}
	file, err := os.ReadFile("../components/monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["hearth.json"] != string(file) {
		t.Error("the ConfigMap's hearth.json differs from components/monitoring/dashboard.json")
	}
	var dashboard grafanaDashboard
	if err := json.Unmarshal(file, &dashboard); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if dashboard.UID == "" || dashboard.Title == "" {
		t.Errorf("uid %q, title %q: both are needed for a stable link", dashboard.UID, dashboard.Title)
	}
	if !slices.ContainsFunc(dashboard.Templating.List, func(v grafanaVariable) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("no datasource variable of type prometheus")
	}
	ids := map[int]bool{}
	for _, p := range dashboard.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside Grafana's 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.Datasource.Type != "prometheus" || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: target %+v", p.Title, tg)
			}
		}
	}
}

// grafanaDashboard is what the test reads of a dashboard's JSON model.
type grafanaDashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr       string `json:"expr"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
		GridPos struct {
			X, Y, W, H int
		} `json:"gridPos"`
	} `json:"panels"`
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
}

type grafanaVariable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"`
}

// rules returns every rule of the overlay's PrometheusRules.
func rules(t *testing.T, b built) []monitoringv1.Rule {
	t.Helper()
	var found []monitoringv1.Rule
	for _, pr := range all[*monitoringv1.PrometheusRule](b) {
		for _, g := range pr.Spec.Groups {
			found = append(found, g.Rules...)
		}
	}
	if len(found) == 0 {
		t.Fatal("no PrometheusRule with rules")
	}
	return found
}

// expandLikePrometheus parses and runs an annotation's template as Prometheus does, with the
// $labels and $value it defines and the functions these templates use.
func expandLikePrometheus(text string) error {
	funcs := template.FuncMap{
		"humanize":           func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) },
		"humanizePercentage": func(v float64) string { return strconv.FormatFloat(v*100, 'g', 4, 64) + "%" },
		"humanize1024":       func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) },
		"humanizeDuration":   func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) + "s" },
	}
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$value := .Value}}"
	tmpl, err := template.New("annotation").Option("missingkey=zero").Funcs(funcs).Parse(defs + text)
	if err != nil {
		return err
	}
	data := struct {
		Labels, ExternalLabels map[string]string
		Value                  float64
	}{map[string]string{}, map[string]string{}, 0.05}
	return tmpl.Execute(&strings.Builder{}, data)
}
