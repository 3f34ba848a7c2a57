package admission

import (
	"context"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// sample reads a manifest of config/samples into obj, in namespace ns.
func sample(t *testing.T, file, ns string, obj client.Object) {
	t.Helper()
	data, err := os.ReadFile("../../config/samples/" + file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	obj.SetNamespace(ns)
}

// TestFACT3_TheTourTypoRefusalSuggestsTheName: `kubectl apply` of the tour's broken
// pack is refused naming the unknown identifier and the declared function it
// misspells, and a name with nothing close is refused without a guess.
func TestFACT3_TheTourTypoRefusalSuggestsTheName(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	var capability rulesv1alpha1.Capability
	sample(t, "rules_v1alpha1_capability.yaml", ns, &capability)
	mustCreate(t, &capability)

	var broken rulesv1alpha1.RulePack
	sample(t, "rules_v1alpha1_rulepack_broken.yaml", ns, &broken)
	err := k8s.Create(context.Background(), broken.DeepCopy())
	const want = `spec.rules[0].when: Invalid value: "pth_outside_scope(\"read\")": [OAR-FACT-3] unknown identifier "pth_outside_scope" at offset 0; did you mean "path_outside_scope"? (rule acme.security/READ_OUTSIDE_SCOPE_TYPO)`
	if err == nil || !strings.Contains(err.Error(), `RulePack.rules.oar.dev "acme-broken" is invalid: `+want) {
		t.Errorf("refusal:\n %v\nwant it to contain\n %s", err, want)
	}
	msg := hasCause(t, causes(t, err), "spec.rules[0].when", "OAR-FACT-3", "acme.security/READ_OUTSIDE_SCOPE_TYPO")
	if !strings.Contains(msg, `did you mean "path_outside_scope"?`) {
		t.Errorf("cause %q does not suggest path_outside_scope", msg)
	}

	far := broken.DeepCopy()
	far.Spec.Rules = rawRules(t, []map[string]any{with(rule("acme.security", "READ_OUTSIDE_SCOPE_TYPO"), "when", `scope_check("read")`)})
	msg = hasCause(t, causes(t, k8s.Create(context.Background(), far)), "spec.rules[0].when", "OAR-FACT-3", "acme.security/READ_OUTSIDE_SCOPE_TYPO")
	if !strings.Contains(msg, `unknown identifier "scope_check"`) || strings.Contains(msg, "did you mean") {
		t.Errorf("cause %q: want the unknown identifier named and nothing suggested", msg)
	}
}
