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
	rules := alertRules(t, pr)
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
	want := []string{"OARBundleNearSizeLimit", "OARCapabilityNarrowed", "OAREngineBundleRefused", "OAREngineServesUnpublishedBundle", "OAREngineSessionStoreFailing", "OAREngineSessionsEvicted", "OARResourceNotReady"}
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

// alertRules are the rules of every group of a rendered PrometheusRule.
func alertRules(t *testing.T, pr *unstructured.Unstructured) []alertRule {
	t.Helper()
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
	return rules
}

// TestEngineBundleRefusedFiresWhileRefused evaluates OAREngineBundleRefused as the chart
// renders it, with Prometheus' own engine (bin/promql-check), over what two sidecars
// export, scraped every minute: agent-0 refuses a bundle that stays mounted 35 minutes,
// agent-1 one that is superseded before the alert's for: has passed. Each sidecar tries a
// mounted bundle once, so its failures counter rises once and stays; its
// oar_engine_bundle_refused gauge is 1 while the refused bundle is mounted. The alert
// fires for agent-0 from the moment the refusal has lasted for: until it is superseded,
// and never for agent-1, with values.yaml's for: and a shorter one.
func TestEngineBundleRefusedFiresWhileRefused(t *testing.T) {
	withAlertValues(t, engineBundleRefusedFiresWhileRefused)
}

// withAlertValues runs check on the chart rendered with values.yaml's for: and with the
// PrometheusRule value set's, a shorter one.
func withAlertValues(t *testing.T, check func(*testing.T, valueSet)) {
	for _, vs := range []valueSet{
		{name: "values.yaml's for:", values: "metrics: {prometheusRule: {enabled: true}}"},
		valueSetNamed(t, "PrometheusRule"),
	} {
		t.Run(vs.name, func(t *testing.T) { check(t, vs) })
	}
}

func engineBundleRefusedFiresWhileRefused(t *testing.T, vs valueSet) {
	rule, hold := renderedAlert(t, vs, "OAREngineBundleRefused")
	const scrape, refusedAt, supersededAt, end = time.Minute, 5 * time.Minute, 40 * time.Minute, 60 * time.Minute
	shortSupersededAt := refusedAt + hold - 2*scrape
	series := func(pod string, superseded time.Duration) []string {
		sel := fmt.Sprintf(`{namespace="agents",pod=%q}`, pod)
		return []string{
			"oar_engine_bundle_refused" + sel + sampled(scrape, end, func(t time.Duration) bool { return t >= refusedAt && t < superseded }),
			"oar_engine_bundle_reload_failures_total" + sel + sampled(scrape, end, func(t time.Duration) bool { return t >= refusedAt }),
		}
	}
	out := promqlCheckRaw(t, promqlInput{
		Metrics:     exportedMetrics(t),
		Expressions: map[string]string{rule.Alert: rule.Expr},
		Alerts: &promqlAlerts{For: map[string]string{rule.Alert: rule.For}, Interval: scrape.String(),
			Series: slices.Concat(series("agent-0", supersededAt), series("agent-1", shortSupersededAt))},
	})
	want := []promqlFiring{{Labels: `{namespace="agents", pod="agent-0"}`, From: (refusedAt + hold).String(), To: (supersededAt - scrape).String()}}
	if v := out.verdicts[rule.Alert]; out.code != 0 || v.Error != "" || !slices.Equal(v.Firing, want) {
		t.Errorf("%s (for: %s, expr %s) fired %+v (exit %d, %s); want %+v", rule.Alert, rule.For, rule.Expr, v.Firing, out.code, v.Error, want)
	}
}

// TestEngineSessionStoreFailingFiresWhileFailing evaluates OAREngineSessionStoreFailing
// as the chart renders it, with Prometheus' own engine, over two sidecars scraped every
// minute: agent-0's loads time out once a minute for 35 minutes, agent-1's for three
// minutes, a blip. The alert fires for agent-0, naming the cause, from the moment its
// failures have lasted for: until the last one leaves the 5-minute window, and never
// for agent-1, with values.yaml's for: and a shorter one.
func TestEngineSessionStoreFailingFiresWhileFailing(t *testing.T) {
	withAlertValues(t, engineSessionStoreFailingFiresWhileFailing)
}

func engineSessionStoreFailingFiresWhileFailing(t *testing.T, vs valueSet) {
	rule, hold := renderedAlert(t, vs, "OAREngineSessionStoreFailing")
	const scrape, from, until, end = time.Minute, 5 * time.Minute, 40 * time.Minute, 60 * time.Minute
	series := func(pod string, from, until time.Duration) string {
		sel := fmt.Sprintf(`{namespace="agents",pod=%q,op="load",cause="timeout"}`, pod)
		return "oar_engine_session_store_failures_total" + sel + counted(scrape, end, func(t time.Duration) bool { return t >= from && t < until })
	}
	out := promqlCheckRaw(t, promqlInput{
		Metrics:     exportedMetrics(t),
		Expressions: map[string]string{rule.Alert: rule.Expr},
		Alerts: &promqlAlerts{For: map[string]string{rule.Alert: rule.For}, Interval: scrape.String(),
			Series: []string{series("agent-0", from, until), series("agent-1", 10*time.Minute, 13*time.Minute)}},
	})
	// The last rise is between the samples at until - 2 scrapes and until - 1: the
	// 5-minute window holds both until 2 scrapes after until.
	want := []promqlFiring{{Labels: `{cause="timeout", namespace="agents", pod="agent-0"}`, From: (from + hold).String(), To: (until + 2*scrape).String()}}
	if v := out.verdicts[rule.Alert]; out.code != 0 || v.Error != "" || !slices.Equal(v.Firing, want) {
		t.Errorf("%s (for: %s, expr %s) fired %+v (exit %d, %s); want %+v", rule.Alert, rule.For, rule.Expr, v.Firing, out.code, v.Error, want)
	}
}

// TestEngineSessionsEvictedFiresWhileEvicting evaluates OAREngineSessionsEvicted as the
// chart renders it over two sidecars scraped every minute: agent-0 forgets a session to
// make room once a minute for 35 minutes, agent-1 for three minutes, and both forget
// idle ones (reason ttl) throughout. The alert fires for agent-0 from the moment its
// evictions have lasted for: until the last one leaves the 5-minute window, and never
// for agent-1 nor for the idle sessions, with values.yaml's for: and a shorter one.
func TestEngineSessionsEvictedFiresWhileEvicting(t *testing.T) {
	withAlertValues(t, engineSessionsEvictedFiresWhileEvicting)
}

func engineSessionsEvictedFiresWhileEvicting(t *testing.T, vs valueSet) {
	rule, hold := renderedAlert(t, vs, "OAREngineSessionsEvicted")
	const scrape, from, until, end = time.Minute, 5 * time.Minute, 40 * time.Minute, 70 * time.Minute
	series := func(pod, reason string, from, until time.Duration) string {
		sel := fmt.Sprintf(`{namespace="agents",pod=%q,reason=%q}`, pod, reason)
		return "oar_engine_session_evictions_total" + sel + counted(scrape, end, func(t time.Duration) bool { return t >= from && t < until })
	}
	out := promqlCheckRaw(t, promqlInput{
		Metrics:     exportedMetrics(t),
		Expressions: map[string]string{rule.Alert: rule.Expr},
		Alerts: &promqlAlerts{For: map[string]string{rule.Alert: rule.For}, Interval: scrape.String(),
			Series: []string{series("agent-0", "lru", from, until), series("agent-1", "lru", 10*time.Minute, 13*time.Minute),
				series("agent-1", "ttl", 0, end)}},
	})
	// The last rise is between the samples at until - 2 scrapes and until - 1: the
	// 5-minute window holds both until 2 scrapes after until.
	want := []promqlFiring{{Labels: `{namespace="agents", pod="agent-0"}`, From: (from + hold).String(), To: (until + 2*scrape).String()}}
	if v := out.verdicts[rule.Alert]; out.code != 0 || v.Error != "" || !slices.Equal(v.Firing, want) {
		t.Errorf("%s (for: %s, expr %s) fired %+v (exit %d, %s); want %+v", rule.Alert, rule.For, rule.Expr, v.Firing, out.code, v.Error, want)
	}
}

// renderedAlert is the alert named name of the PrometheusRule the chart renders with
// vs, and its for:.
func renderedAlert(t *testing.T, vs valueSet, name string) (alertRule, time.Duration) {
	t.Helper()
	rules := alertRules(t, mustRender(t, "oar-system", vs).find(t, "PrometheusRule", "oar-operator"))
	i := slices.IndexFunc(rules, func(r alertRule) bool { return r.Alert == name })
	if i < 0 {
		t.Fatalf("no %s", name)
	}
	hold, err := time.ParseDuration(rules[i].For)
	if err != nil {
		t.Fatal(err)
	}
	return rules[i], hold
}

// counted describes a counter in the notation of Prometheus' PromQL tests: one sample
// every interval from time 0 until end, counting one more at each sample where one(t)
// holds.
func counted(interval, end time.Duration, one func(t time.Duration) bool) string {
	var b strings.Builder
	n := 0
	for t := time.Duration(0); t < end; t += interval {
		if one(t) {
			n++
		}
		fmt.Fprintf(&b, " %d", n)
	}
	return b.String()
}

// sampled describes a series in the notation of Prometheus' PromQL tests: one sample
// every interval from time 0 until end, 1 where one(t) holds and 0 elsewhere.
func sampled(interval, end time.Duration, one func(t time.Duration) bool) string {
	var b strings.Builder
	for t := time.Duration(0); t < end; t += interval {
		if one(t) {
			b.WriteString(" 1")
		} else {
			b.WriteString(" 0")
		}
	}
	return b.String()
}

// TestPromQLCheckRefuses: the check this test relies on fails an expression that does not
// parse and one naming a metric nobody exports.
func TestPromQLCheckRefuses(t *testing.T) {
	out := promqlCheckRaw(t, promqlInput{Metrics: []string{"oar_operator_resource_ready"}, Expressions: map[string]string{
		"broken": "max by (name (oar_operator_resource_ready)", "unknown": "oar_operator_resource_readiness == 0",
	}})
	if out.code != 1 || !strings.Contains(out.verdicts["broken"].Error, "parse") || !strings.Contains(out.verdicts["unknown"].Error, "oar_operator_resource_readiness") {
		t.Errorf("exit %d, verdicts %+v", out.code, out.verdicts)
	}
}

// promqlInput is what bin/promql-check reads (hack/promql): the known metrics, the
// expressions and, optionally, a run evaluating some of them as alerts over time.
type promqlInput struct {
	Metrics     []string          `json:"metrics"`
	Expressions map[string]string `json:"expressions"`
	Alerts      *promqlAlerts     `json:"alerts,omitempty"`
}

// promqlAlerts evaluates the expressions named in For, with that for:, over Series
// (Prometheus' PromQL test notation, one sample every Interval).
type promqlAlerts struct {
	For      map[string]string `json:"for"`
	Series   []string          `json:"series"`
	Interval string            `json:"interval"`
}

type promqlVerdict struct {
	Metrics []string       `json:"metrics"`
	Error   string         `json:"error"`
	Firing  []promqlFiring `json:"firing"`
}

// promqlFiring is a stretch of evaluations at which an alert fired for one label set.
type promqlFiring struct {
	Labels, From, To string
}

type promqlOutput struct {
	code     int
	verdicts map[string]promqlVerdict
}

// promqlCheck runs bin/promql-check and fails the test when it refuses anything.
func promqlCheck(t *testing.T, known []string, expressions map[string]string) map[string]promqlVerdict {
	t.Helper()
	out := promqlCheckRaw(t, promqlInput{Metrics: known, Expressions: expressions})
	if out.code != 0 {
		t.Errorf("promql-check refused the PrometheusRule (exit %d)", out.code)
	}
	return out.verdicts
}

func promqlCheckRaw(t *testing.T, input promqlInput) promqlOutput {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "promql-check")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing (make bin/promql-check builds it; make test does): %v", bin, err)
	}
	in, err := json.Marshal(input)
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
		Subscribers: func() int { return 1 }, Dropped: func() uint64 { return 1 }, BundleRefused: func() bool { return true }})
	sm.Evaluated("tool.pre_invoke", "allow", time.Millisecond)
	sm.Rejected("too_large")
	sm.Reloaded(&reload.Served{Bundle: &bundle.Bundle{Digest: "sha256:0"}, LoadedAt: time.Now(),
		Loaded: &bundle.Loaded{Capability: &engine.Capability{Host: "acme.gateway"}, RuleSet: &engine.RuleSet{}}})
	sm.ReloadFailed(fmt.Errorf("refused"))
	sm.RoundTrip("load", time.Millisecond, errors.New("unreachable"))
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
