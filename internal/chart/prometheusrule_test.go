package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/oar-operator/oar-operator/controllers"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/metrics"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
	"github.com/oar-operator/oar-operator/internal/testenv"
)

// alertRule is one rule of the rendered PrometheusRule.
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// TestPrometheusRule: the chart's PrometheusRule carries the alerts README "Monitoring"
// recommends and one for a Capability held back as CapabilityNarrowed, each with for:,
// a severity and a summary naming the resource; every expression parses with Prometheus'
// own parser (bin/promql-check, hack/promql) and names only metrics the manager or the
// engine sidecar exports, as their code registers them.
func TestPrometheusRule(t *testing.T) {
	r := mustRender(t, "oar-system", valueSetNamed(t, "PrometheusRule"))
	pr := r.find(t, "PrometheusRule", "oar-operator")
	if got := pr.GetLabels()["release"]; got != "kube-prometheus-stack" {
		t.Errorf("extra label release=%q", got)
	}
	groups, _, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if err != nil {
		t.Fatal(err)
	}
	var rules []alertRule
	for _, g := range groups {
		raw, err := json.Marshal(g.(map[string]any)["rules"])
		if err != nil {
			t.Fatal(err)
		}
		var rs []alertRule
		if err := json.Unmarshal(raw, &rs); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, rs...)
	}
	var names []string
	expressions := map[string]string{}
	for _, rule := range rules {
		names = append(names, rule.Alert)
		expressions[rule.Alert] = rule.Expr
		if rule.For == "" || rule.Labels["severity"] == "" {
			t.Errorf("%s: for %q, severity %q; want both", rule.Alert, rule.For, rule.Labels["severity"])
		}
		if s := rule.Annotations["summary"]; !strings.Contains(s, "{{ $labels.name }}") && !strings.Contains(s, "{{ $labels.pod }}") &&
			!strings.Contains(s, "{{ $labels.capability }}") {
			t.Errorf("%s: summary %q names no resource", rule.Alert, s)
		}
	}
	want := []string{"OARBundleNearSizeLimit", "OARCapabilityNarrowed", "OAREngineBundleRefused", "OAREngineServesUnpublishedBundle", "OARResourceNotReady"}
	if slices.Sort(names); !slices.Equal(names, want) {
		t.Errorf("alerts %v, want %v", names, want)
	}
	for _, rule := range rules {
		if rule.Alert == "OARResourceNotReady" && (rule.For != "10m" || rule.Labels["severity"] != "page") {
			t.Errorf("%s: for %q, severity %q; want the values' 10m and page", rule.Alert, rule.For, rule.Labels["severity"])
		}
	}
	if !strings.Contains(expressions["OARCapabilityNarrowed"], `reason="CapabilityNarrowed"`) {
		t.Errorf("OARCapabilityNarrowed does not select the reason: %s", expressions["OARCapabilityNarrowed"])
	}

	verdicts := promqlCheck(t, exportedMetrics(t), expressions)
	for alert, v := range verdicts {
		if v.Error != "" {
			t.Errorf("%s: %s", alert, v.Error)
		}
		if len(v.Metrics) == 0 {
			t.Errorf("%s selects no metric", alert)
		}
	}
}

// TestPromQLCheckRefuses: the check this test relies on fails an expression that does not
// parse and one naming a metric nobody exports.
func TestPromQLCheckRefuses(t *testing.T) {
	out := promqlCheckRaw(t, []string{"oar_operator_resource_ready"}, map[string]string{
		"broken": "max by (name (oar_operator_resource_ready)", "unknown": "oar_operator_resource_readiness == 0",
	})
	if out.code != 1 || !strings.Contains(out.verdicts["broken"].Error, "parse") || !strings.Contains(out.verdicts["unknown"].Error, "oar_operator_resource_readiness") {
		t.Errorf("exit %d, verdicts %+v", out.code, out.verdicts)
	}
}

type promqlVerdict struct {
	Metrics []string `json:"metrics"`
	Error   string   `json:"error"`
}

type promqlOutput struct {
	code     int
	verdicts map[string]promqlVerdict
}

// promqlCheck runs bin/promql-check and fails the test when it refuses anything.
func promqlCheck(t *testing.T, known []string, expressions map[string]string) map[string]promqlVerdict {
	t.Helper()
	out := promqlCheckRaw(t, known, expressions)
	if out.code != 0 {
		t.Errorf("promql-check refused the PrometheusRule (exit %d)", out.code)
	}
	return out.verdicts
}

func promqlCheckRaw(t *testing.T, known []string, expressions map[string]string) promqlOutput {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "promql-check")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing (make bin/promql-check builds it; make test does): %v", bin, err)
	}
	in, err := json.Marshal(map[string]any{"metrics": known, "expressions": expressions})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("promql-check: %v", err)
	}
	var out promqlOutput
	out.code = code
	if err := json.Unmarshal(stdout, &out.verdicts); err != nil {
		t.Fatalf("promql-check (exit %d) answered %q: %v; stderr %s", code, stdout, err, stderr.String())
	}
	return out
}

// fqName reads a metric's name from its description (client_golang has no accessor).
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// exportedMetrics are the names of the metrics the manager and the engine sidecar
// export, from their code: the manager's controller-runtime registry, which holds the
// manager's own counter and controller-runtime's metrics, and its state collector; the
// sidecar's metrics package, each metric given a value so that every family shows.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	names := map[string]bool{}
	gather := func(g prometheus.Gatherer) {
		families, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			names[f.GetName()] = true
		}
	}
	gather(ctrlmetrics.Registry)
	descs := make(chan *prometheus.Desc, 64)
	go func() {
		controllers.NewStateCollector(nil).Describe(descs)
		close(descs)
	}()
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names[m[1]] = true
	}
	sm := metrics.New(metrics.Sources{Sessions: func() int { return 1 }, Evictions: func() (uint64, uint64) { return 1, 1 },
		Subscribers: func() int { return 1 }, Dropped: func() uint64 { return 1 }})
	sm.Evaluated("tool.pre_invoke", "allow", time.Millisecond)
	sm.Rejected("too_large")
	sm.Reloaded(&reload.Served{Bundle: &bundle.Bundle{Digest: "sha256:0"}, LoadedAt: time.Now(),
		Loaded: &bundle.Loaded{Capability: &engine.Capability{Host: "acme.gateway"}, RuleSet: &engine.RuleSet{}}})
	sm.ReloadFailed(fmt.Errorf("refused"))
	gather(sm.Registry())
	for _, n := range []string{"oar_operator_resource_ready", "oar_engine_bundle_info"} {
		if !names[n] {
			t.Fatalf("%s is not among the exported metrics: the collection is broken", n)
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
