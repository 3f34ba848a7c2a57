package chart

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// real kube-apiserver (dry run), with the chart's CRDs and cert-manager's Issuer and
// Certificate CRDs installed: what `helm install` would send must be accepted as it is.
func TestEveryObjectIsAcceptedByTheAPIServer(t *testing.T) {
	ctx := context.Background()
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ns := env.Namespace(t, "chart-")
			r := mustRender(t, ns, vs)
			for _, o := range r.objects {
				if err := dryRunApply(ctx, o); err != nil {
					t.Errorf("%s %s refused: %v", o.GetKind(), o.GetName(), err)
				}
			}
		})
	}
}

// TestDryRunRefusesBrokenObjects proves the dry run above is a real check: the same
// objects, each broken in one field, are refused.
func TestDryRunRefusesBrokenObjects(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "chart-broken-")
	r := mustRender(t, ns, valueSets[1]) // cert-manager: also breaks a custom resource
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
