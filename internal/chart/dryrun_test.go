package chart

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// dryRunApply sends obj to the API server as a server-side apply that is validated,
// admitted and defaulted but never persisted. Server-side apply refuses fields the
// schema does not declare (built-in kinds and CRDs alike), so a misspelt field fails
// instead of being dropped.
func dryRunApply(ctx context.Context, obj *unstructured.Unstructured) error {
	return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		client.DryRunAll, client.FieldOwner("chart-test"), client.ForceOwnership)
}

// TestEveryObjectIsAcceptedByTheAPIServer applies every object of every value set to a
// real kube-apiserver (dry run), with the chart's CRDs, cert-manager's Issuer and
// Certificate CRDs and the Prometheus Operator's ServiceMonitor CRD installed: what
// `helm install` would send must be accepted as it is.
func TestEveryObjectIsAcceptedByTheAPIServer(t *testing.T) {
	ctx := context.Background()
	applied := map[string]int{}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ns := env.Namespace(t, "chart-")
			r := mustRender(t, ns, vs)
			for _, o := range r.objects {
				if err := dryRunApply(ctx, o); err != nil {
					t.Errorf("%s %s refused: %v", o.GetKind(), o.GetName(), err)
				}
				applied[o.GetKind()]++
			}
		})
	}
	for _, kind := range []string{"Certificate", "Issuer", "ServiceMonitor"} {
		if applied[kind] == 0 {
			t.Errorf("no value set renders a %s: its CRD goes untested", kind)
		}
	}
}

// TestDryRunRefusesBrokenObjects proves the dry run above is a real check: the same
// objects, each broken in one field, are refused.
func TestDryRunRefusesBrokenObjects(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "chart-broken-")
	// cert-manager and a ServiceMonitor: also breaks custom resources of both CRDs.
	r := mustRender(t, ns, valueSetNamed(t, "ServiceMonitor, cert-manager"))
	for _, tc := range []struct {
		name, kind, objName string
		breakIt             func(map[string]any)
		want                string
	}{
		{"misspelt field of a built-in kind", "Deployment", "oar-operator", func(o map[string]any) {
			c := container(o)
			c["securityContext"].(map[string]any)["readOnlyRootFileSystem"] = true
		}, "readOnlyRootFileSystem"},
		{"selector that misses the pods", "Deployment", "oar-operator", func(o map[string]any) {
			must(unstructured.SetNestedField(o, "someone-else", "spec", "selector", "matchLabels", "app.kubernetes.io/name"))
		}, "selector"},
		{"CEL that does not compile", "ValidatingWebhookConfiguration", "oar-operator-validating-webhook", func(o map[string]any) {
			wh := o["webhooks"].([]any)[0].(map[string]any)
			wh["matchConditions"].([]any)[0].(map[string]any)["expression"] = "object.spec =="
		}, "matchConditions"},
		{"misspelt field of a cert-manager kind", "Certificate", "oar-operator-webhook-cert", func(o map[string]any) {
			must(unstructured.SetNestedField(o, "oar.example", "spec", "dnsName"))
		}, "dnsName"},
		{"misspelt field of a Prometheus Operator kind", "ServiceMonitor", "oar-operator-metrics", func(o map[string]any) {
			ep := o["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
			ep["tlsConfig"].(map[string]any)["serverNmae"] = "oar-operator-metrics"
		}, "serverNmae"},
		{"scrape interval the Prometheus Operator refuses", "ServiceMonitor", "oar-operator-metrics", func(o map[string]any) {
			o["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)["interval"] = "30 seconds"
		}, "interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := r.find(t, tc.kind, tc.objName).DeepCopy()
			if err := dryRunApply(ctx, obj); err != nil {
				t.Fatalf("the unbroken %s is refused: %v", tc.kind, err)
			}
			tc.breakIt(obj.Object)
			err := dryRunApply(ctx, obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("broken %s: error %v; want one naming %s", tc.kind, err, tc.want)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestPodMonitorSample applies config/samples/agent_podmonitor.yaml to the API server
// (dry run) with the Prometheus Operator's PodMonitor CRD, and holds it to
// config/samples/agent_deployment.yaml: it selects the agent's pods and scrapes /metrics
// in plain HTTP on the oar-engine sidecar's named port that the kubelet's probes use
// (the --probe-address port, as cmd/oar-engine's TestAgentSample checks), the one port
// of the sidecar reachable from outside the pod. A misspelt field is refused.
func TestPodMonitorSample(t *testing.T) {
	ctx := context.Background()
	sample := func(name string) *unstructured.Unstructured {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(env.Root, "config", "samples", name))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeDocuments(data)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %d objects, %v; want one", name, len(objs), err)
		}
		return objs[0]
	}
	pm := sample("agent_podmonitor.yaml")
	if pm.GetAPIVersion() != "monitoring.coreos.com/v1" || pm.GetKind() != "PodMonitor" {
		t.Fatalf("agent_podmonitor.yaml holds a %s %s", pm.GetAPIVersion(), pm.GetKind())
	}
	ns := env.Namespace(t, "podmonitor-")
	pm.SetNamespace(ns)
	if err := dryRunApply(ctx, pm); err != nil {
		t.Fatalf("the PodMonitor sample is refused: %v", err)
	}

	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sample("agent_deployment.yaml").Object, &dep); err != nil {
		t.Fatal(err)
	}
	var monitor struct {
		Spec struct {
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []struct {
				Port   string `json:"port"`
				Scheme string `json:"scheme"`
				Path   string `json:"path"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pm.Object, &monitor); err != nil {
		t.Fatal(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("selector %v (%v) does not pick the agent's pods, labelled %v", sel, err, dep.Spec.Template.Labels)
	}
	var sidecar *corev1.Container
	for i, c := range dep.Spec.Template.Spec.InitContainers {
		if c.Name == "oar-engine" {
			sidecar = &dep.Spec.Template.Spec.InitContainers[i]
		}
	}
	if sidecar == nil || sidecar.ReadinessProbe == nil || sidecar.ReadinessProbe.HTTPGet == nil {
		t.Fatal("agent_deployment.yaml has no oar-engine sidecar with an HTTP readiness probe")
	}
	if len(monitor.Spec.Endpoints) != 1 {
		t.Fatalf("%d podMetricsEndpoints; want one", len(monitor.Spec.Endpoints))
	}
	ep, probePort := monitor.Spec.Endpoints[0], sidecar.ReadinessProbe.HTTPGet.Port
	named := slices.ContainsFunc(sidecar.Ports, func(p corev1.ContainerPort) bool { return p.Name == ep.Port })
	if !named || probePort.Type != intstr.String || ep.Port != probePort.StrVal {
		t.Errorf("PodMonitor scrapes port %q; want the oar-engine container's named probe port %q", ep.Port, probePort.String())
	}
	if ep.Scheme != "http" || ep.Path != "/metrics" {
		t.Errorf("PodMonitor scrapes %s %s; want http /metrics", ep.Scheme, ep.Path)
	}

	broken := pm.DeepCopy()
	broken.Object["spec"].(map[string]any)["podMetricsEndpoints"].([]any)[0].(map[string]any)["portName"] = "oar-probes"
	if err := dryRunApply(ctx, broken); err == nil || !strings.Contains(err.Error(), "portName") {
		t.Fatalf("PodMonitor with a misspelt field: error %v; want one naming portName", err)
	} else {
		t.Logf("refused: %v", err)
	}
}

// TestChartCRDsAreTheGenerated keeps charts/oar-operator/crds a copy of config/crd/bases
// (`make manifests` copies them; `make manifests-check` fails on a difference).
func TestChartCRDsAreTheGenerated(t *testing.T) {
	bases := filepath.Join(env.Root, "config", "crd", "bases")
	want, err := filepath.Glob(filepath.Join(bases, "*.yaml"))
	if err != nil || len(want) == 0 {
		t.Fatalf("config/crd/bases: %v %v", want, err)
	}
	got, _ := filepath.Glob(filepath.Join(chartDir(t), "crds", "*"))
	if len(got) != len(want) {
		t.Errorf("chart crds/ holds %d files, config/crd/bases %d; run make manifests", len(got), len(want))
	}
	for _, w := range want {
		a, errA := os.ReadFile(w)
		b, errB := os.ReadFile(filepath.Join(chartDir(t), "crds", filepath.Base(w)))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("chart crds/%s differs from config/crd/bases (%v, %v); run make manifests", filepath.Base(w), errA, errB)
		}
	}
}

// container is the manager container inside a Deployment's unstructured content, to
// change in place (unstructured's Nested helpers return copies).
func container(dep map[string]any) map[string]any {
	m := dep
	for _, k := range []string{"spec", "template", "spec"} {
		m = m[k].(map[string]any)
	}
	return m["containers"].([]any)[0].(map[string]any)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
