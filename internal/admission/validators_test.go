package admission

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// The validators' logic without an API server: a Capability "gateway" in namespace "ns",
// the packs bound to it, and a bundle publishing some of them.

// clusterOf returns a memoryCluster holding the gateway Capability, every pack, and a
// bundle publishing the packs of published (at their generation) and configs, each
// configuration the object it was published for.
func clusterOf(t *testing.T, published, unpublished []*rulesv1alpha1.RulePack, configs ...bundle.Config) *memoryCluster {
	t.Helper()
	capability := capabilityObject("ns", "gateway", gatewaySpec())
	doc, err := resource.CapabilityDocument(capability)
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle.Bundle{Capability: doc, Configs: configs}
	m := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capability}}
	for _, p := range published {
		rules, errs := resource.PackRules(p)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		b.Packs = append(b.Packs, bundle.Pack{Name: p.Name, Generation: p.Generation, Rules: rules})
		m.packs = append(m.packs, *p)
	}
	if _, err := bundle.Load(b); err != nil {
		t.Fatalf("the test's bundle does not load: %v", err)
	}
	for _, p := range unpublished {
		m.packs = append(m.packs, *p)
	}
	for _, c := range configs {
		oc := operatorConfig(t, "ns", c.Name, "gateway", c.Document)
		oc.Generation, oc.Spec.Order = c.Generation, c.Order
		m.configs = append(m.configs, *oc)
	}
	m.bundles = map[types.NamespacedName]*bundle.Bundle{{Namespace: "ns", Name: "gateway"}: b}
	return m
}

// pack is a RulePack of namespace "ns" bound to gateway, at generation 1.
func pack(t *testing.T, name string, rules ...map[string]any) *rulesv1alpha1.RulePack {
	return rulePack(t, "ns", name, "gateway", 1, rules)
}

// verdict runs check and returns its warnings and whether it admitted; an error other
// than a refusal fails the test.
func verdict(t *testing.T, check func() (admission.Warnings, error)) ([]string, bool) {
	t.Helper()
	w, err := check()
	if err != nil && !apierrors.IsInvalid(err) {
		t.Fatal(err)
	}
	return w, err == nil
}

// TestUnchangedSpecIsAdmitted: ValidateUpdate admits an update that leaves spec as it
// was, whatever the spec and the cluster say, and warns about nothing.
func TestUnchangedSpecIsAdmitted(t *testing.T) {
	ctx := context.Background()
	empty := &memoryCluster{}
	broken := rulePack(t, "ns", "broken", "absent", 1, []map[string]any{with(rule("acme.security", "READ"), "oar", "9.9")})
	relabelled := broken.DeepCopy()
	relabelled.Labels = map[string]string{"team": "platform"}
	if w, err := (&RulePackValidator{Cluster: empty}).ValidateUpdate(ctx, broken, relabelled); err != nil || len(w) > 0 {
		t.Errorf("RulePack: %v %v", w, err)
	}
	spec := gatewaySpec()
	spec.Profiles = append(spec.Profiles, "telepathy")
	c := capabilityObject("ns", "gateway", spec)
	if w, err := (&CapabilityValidator{Cluster: empty}).ValidateUpdate(ctx, c, c.DeepCopy()); err != nil || len(w) > 0 {
		t.Errorf("Capability: %v %v", w, err)
	}
	oc := operatorConfig(t, "ns", "config", "absent", map[string]any{"oar_config": "7"})
	if w, err := (&OperatorConfigValidator{Cluster: empty}).ValidateUpdate(ctx, oc, oc.DeepCopy()); err != nil || len(w) > 0 {
		t.Errorf("OperatorConfig: %v %v", w, err)
	}
}

// TestReferencesIntoOtherPacks: a reference resolves into any pack bound to the
// Capability; it is warned about when that pack is not published, refused when no pack
// defines the target ([OAR-EVAL-13], [OAR-OPS-5], [OAR-FIRE-11]).
func TestReferencesIntoOtherPacks(t *testing.T) {
	v := &RulePackValidator{Cluster: clusterOf(t,
		[]*rulesv1alpha1.RulePack{pack(t, "base", rule("acme.base", "A"))},
		[]*rulesv1alpha1.RulePack{pack(t, "pending", rule("acme.pending", "P"))})}
	user := rule("acme.user", "U")
	for _, c := range []struct {
		name    string
		rule    map[string]any
		admit   bool
		warning []string
	}{
		{"an override of a published rule", with(user, "overrides", []any{"acme.base/A"}), true, nil},
		{"an override of an unpublished rule", with(user, "overrides", []any{"acme.pending/P"}), true,
			[]string{"[OAR-EVAL-13] spec.rules[0].overrides[0]", `RulePack "pending"`}},
		{"a substitution by an unpublished rule", with(user, "on_error", "acme.pending/P"), true,
			[]string{"[OAR-OPS-5] spec.rules[0].on_error", `RulePack "pending"`}},
		{"a counter of an unpublished rule", with(user, "when", `fire_count_of("acme.pending/P") > 1`), true,
			[]string{"[OAR-FIRE-11] spec.rules[0].when", "acme.pending/P", `RulePack "pending"`}},
		{"an override of a rule no pack defines", with(user, "overrides", []any{"acme.none/N"}), false, nil},
		{"a counter of a rule no pack defines", with(user, "when", `fire_count_of("acme.none/N") > 1`), false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, admitted := verdict(t, func() (admission.Warnings, error) {
				return v.ValidateCreate(context.Background(), pack(t, "user", c.rule))
			})
			if admitted != c.admit {
				t.Fatalf("admitted %v, want %v", admitted, c.admit)
			}
			if c.warning == nil && len(ws) > 0 {
				t.Fatalf("unexpected warnings %q", ws)
			}
			if c.warning != nil {
				hasWarning(t, ws, c.warning...)
			}
		})
	}
}

// TestPublishedConfigurations: a pack change that makes a published configuration stop
// applying is admitted with a warning naming it and what the controller would do — a
// rule made mandatory ([OAR-CFG-5]) by an update holds the update back, a bare id made
// ambiguous ([OAR-CFG-8]) by a new pack holds the pack back — and a configuration it
// does not affect is not mentioned.
func TestPublishedConfigurations(t *testing.T) {
	base := pack(t, "base", rule("acme.base", "A"), rule("acme.base", "B"))
	configs := []bundle.Config{
		{Name: "quiet", Generation: 1, Document: map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/A"}}},
		{Name: "bare", Generation: 1, Order: 1, Document: map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"B": "monitor"}}},
	}
	v := &RulePackValidator{Cluster: clusterOf(t, []*rulesv1alpha1.RulePack{base}, nil, configs...)}
	ctx := context.Background()
	mandatory := pack(t, "base", with(rule("acme.base", "A"), "mandatory", true), rule("acme.base", "B"))
	ws, admitted := verdict(t, func() (admission.Warnings, error) { return v.ValidateUpdate(ctx, base, mandatory) })
	if !admitted || len(ws) != 1 {
		t.Fatalf("admitted %v, warnings %q", admitted, ws)
	}
	hasWarning(t, ws, "[OAR-CFG-5]", `OperatorConfig "quiet" spec.config.disable[0]`, "hold this update back")
	ws, admitted = verdict(t, func() (admission.Warnings, error) {
		return v.ValidateCreate(ctx, pack(t, "twin", rule("acme.twin", "B")))
	})
	if !admitted || len(ws) != 1 {
		t.Fatalf("admitted %v, warnings %q", admitted, ws)
	}
	// A new pack never evicts a published configuration: it is the one held back.
	hasWarning(t, ws, "[OAR-CFG-8]", `OperatorConfig "bare" spec.config.enforcement.B`, "acme.twin/B", "hold this pack back")
}

// TestDroppedRuleCountedElsewhere: an update dropping a rule whose firings a published
// pack counts warns that the published pack would stop loading ([OAR-FIRE-11]).
func TestDroppedRuleCountedElsewhere(t *testing.T) {
	base := pack(t, "base", rule("acme.base", "A"))
	user := pack(t, "user", with(rule("acme.user", "U"), "when", `fire_count_of("acme.base/A") > 1`))
	v := &RulePackValidator{Cluster: clusterOf(t, []*rulesv1alpha1.RulePack{base, user}, nil)}
	ws, admitted := verdict(t, func() (admission.Warnings, error) {
		return v.ValidateUpdate(context.Background(), base, pack(t, "base", rule("acme.base", "Z")))
	})
	if !admitted {
		t.Fatal("refused")
	}
	hasWarning(t, ws, "[OAR-FIRE-11]", `RulePack "user" spec.rules[0].when`, "acme.user/U", "stop loading")
}

// TestInvalidCapability: a pack naming an invalid Capability gets only the checks that
// need none, and a warning naming the Capability's first problem.
func TestInvalidCapability(t *testing.T) {
	spec := gatewaySpec()
	spec.Profiles = append(spec.Profiles, "telepathy")
	v := &RulePackValidator{Cluster: &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capabilityObject("ns", "gateway", spec)}}}
	ws, admitted := verdict(t, func() (admission.Warnings, error) {
		return v.ValidateCreate(context.Background(), pack(t, "p", with(rule("acme.security", "READ"), "when", "pth == 1")))
	})
	if !admitted {
		t.Fatal("refused for a check that needs the capability")
	}
	hasWarning(t, ws, "[OAR-FACT-24] spec.capabilityRef.name", `Capability "gateway" is invalid`, "the version gate")
}

// TestOperatorConfigWithoutBundle: with nothing published only the document's shape and
// version are checked, and a warning says so.
func TestOperatorConfigWithoutBundle(t *testing.T) {
	v := &OperatorConfigValidator{Cluster: &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capabilityObject("ns", "gateway", gatewaySpec())}}}
	ctx := context.Background()
	ws, admitted := verdict(t, func() (admission.Warnings, error) {
		return v.ValidateCreate(ctx, operatorConfig(t, "ns", "c", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/A"}}))
	})
	if !admitted || !strings.Contains(strings.Join(ws, "\n"), "nothing is published") {
		t.Fatalf("admitted %v, warnings %q", admitted, ws)
	}
	if _, admitted := verdict(t, func() (admission.Warnings, error) {
		return v.ValidateCreate(ctx, operatorConfig(t, "ns", "c", "gateway", map[string]any{"oar_config": "1.0", "disable": "acme.base/A"}))
	}); admitted {
		t.Fatal("a disable that is not a list was admitted")
	}
}
