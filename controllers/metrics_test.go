package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// series gathers reg and returns every sample of the metrics named in namespace ns (or
// without a namespace label), keyed "name{label=value,...}" in label order.
func series(t *testing.T, reg *prometheus.Registry, ns string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			inNamespace := true
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" {
					inNamespace = l.GetValue() == ns
					continue
				}
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if inNamespace {
				out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = gaugeValue(m)
			}
		}
	}
	return out
}

// publishedCount reads the publications counter of one Capability.
func publishedCount(t *testing.T, ns, capability string) float64 {
	t.Helper()
	var m dto.Metric
	if err := publications.WithLabelValues(ns, capability).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func gaugeValue(m *dto.Metric) float64 {
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetCounter().GetValue()
}

// TestStateMetrics: the state collector reports each resource's Ready condition and each
// published bundle's digest, rule count and size, follows a deletion, and the
// publications counter counts bundle writes.
func TestStateMetrics(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	good := pack(ns, "good", c.Name, rulesJSON(t, rule("acme.security", "SHELL"), rule("acme.security", "FETCH")))
	bad := pack(ns, "bad", c.Name, rulesJSON(t, rule("acme.security", "TYPO", "when", "pth == 1")))
	create(t, good)
	create(t, bad)
	waitReady(t, good, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, bad, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	b, cm := waitBundle(t, ns, c.Name, "the good pack", func(b *bundle.Bundle) bool { return len(b.Packs) == 1 })
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	encoded, err := bundle.Encode(b)
	if err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(NewStateCollector(k8s))
	want := map[string]float64{
		"oar_operator_resource_ready{kind=Capability,name=" + c.Name + ",reason=Published}": 1,
		"oar_operator_resource_ready{kind=RulePack,name=good,reason=Published}":             1,
		"oar_operator_resource_ready{kind=RulePack,name=bad,reason=LoadFailed}":             0,
		"oar_operator_bundle_info{capability=" + c.Name + ",digest=" + b.Digest + "}":       1,
		"oar_operator_bundle_rules{capability=" + c.Name + "}":                              2,
		"oar_operator_bundle_bytes{capability=" + c.Name + "}":                              float64(encoded.Size),
		"oar_operator_bundle_limit_bytes{}":                                                 bundle.ConfigMapLimit,
	}
	eventually(t, "the state metrics", func() (bool, string) {
		got := series(t, reg, ns)
		return maps.Equal(got, want), describeSeries(got, want)
	})
	if cm.Annotations[resource.DigestAnnotation] != b.Digest {
		t.Errorf("ConfigMap digest %s, bundle %s", cm.Annotations[resource.DigestAnnotation], b.Digest)
	}

	before := publishedCount(t, ns, c.Name)
	if before < 1 {
		t.Errorf("publications of %s: %v, want at least the first", c.Name, before)
	}
	if err := k8s.Delete(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	update(t, good, func() { good.Spec.Rules = rulesJSON(t, rule("acme.security", "SHELL")) })
	b2, _ := waitBundle(t, ns, c.Name, "the edited pack", func(b *bundle.Bundle) bool {
		return len(b.Packs) == 1 && len(b.Packs[0].Rules) == 1
	})
	delete(want, "oar_operator_resource_ready{kind=RulePack,name=bad,reason=LoadFailed}")
	delete(want, "oar_operator_bundle_info{capability="+c.Name+",digest="+b.Digest+"}")
	want["oar_operator_bundle_info{capability="+c.Name+",digest="+b2.Digest+"}"] = 1
	want["oar_operator_bundle_rules{capability="+c.Name+"}"] = 1
	encoded, err = bundle.Encode(b2)
	if err != nil {
		t.Fatal(err)
	}
	want["oar_operator_bundle_bytes{capability="+c.Name+"}"] = float64(encoded.Size)
	eventually(t, "the state metrics after the edit and the deletion", func() (bool, string) {
		got := series(t, reg, ns)
		return maps.Equal(got, want), describeSeries(got, want)
	})
	if after := publishedCount(t, ns, c.Name); after != before+1 {
		t.Errorf("publications of %s went from %v to %v over one changed bundle; want one more", c.Name, before, after)
	}
}

// TestReadyIsPendingUntilTheCurrentGenerationIsReported: a Ready condition about an
// earlier generation says nothing of the current one, so the resource is not ready yet.
func TestReadyIsPendingUntilTheCurrentGenerationIsReported(t *testing.T) {
	for _, tc := range []struct {
		name       string
		generation int64
		conds      []metav1.Condition
		want       string
	}{
		{"no status yet", 1, nil, `oar_operator_resource_ready{kind="RulePack",name="p",namespace="ns",reason="Pending"} 0`},
		{"ready for this generation", 2, []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Published", ObservedGeneration: 2}},
			`oar_operator_resource_ready{kind="RulePack",name="p",namespace="ns",reason="Published"} 1`},
		{"ready for the previous generation", 3, []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Published", ObservedGeneration: 2}},
			`oar_operator_resource_ready{kind="RulePack",name="p",namespace="ns",reason="Pending"} 0`},
		{"conflict", 2, []metav1.Condition{{Type: "Ready", Status: "False", Reason: "Conflict", ObservedGeneration: 2}},
			`oar_operator_resource_ready{kind="RulePack",name="p",namespace="ns",reason="Conflict"} 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &rulesv1alpha1.RulePack{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Generation: tc.generation}}
			ch := make(chan prometheus.Metric, 1)
			sendReady(ch, "RulePack", p, tc.conds)
			var m dto.Metric
			if err := (<-ch).Write(&m); err != nil {
				t.Fatal(err)
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			if got := fmt.Sprintf("oar_operator_resource_ready{%s} %v", strings.Join(labels, ","), m.GetGauge().GetValue()); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func describeSeries(got, want map[string]float64) string {
	var lines []string
	for k, v := range got {
		if w, ok := want[k]; !ok || w != v {
			lines = append(lines, fmt.Sprintf("unexpected %s %v", k, v))
		}
	}
	for k, w := range want {
		if v, ok := got[k]; !ok || w != v {
			lines = append(lines, fmt.Sprintf("missing %s %v", k, w))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "; ")
}
