package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// The bundle publishes RulePack "x" of the object deletedUID; that object was deleted
// and another created under its name, newUID, at generation 1 again, and the controller
// has not published since (it was down, or the Capability is invalid: the bundle then
// stays as it is for good).
const (
	deletedUID types.UID = "uid-of-the-deleted-x"
	newUID     types.UID = "uid-of-the-new-x"
)

// recreatedX returns the cluster in which the live x, at generation 1 with the rules
// rules, is not the published x of generation 1 (acme.x/OLD), and the published
// identities say so, unless recorded is false (a bundle written before identities were
// recorded). RulePack "base" (acme.base/B) and the configuration "quiet" (B monitored)
// are published, and are the objects they were published for.
func recreatedX(t *testing.T, recorded bool, rules ...map[string]any) (*memoryCluster, *rulesv1alpha1.RulePack) {
	t.Helper()
	quiet := bundle.Config{Name: "quiet", Generation: 1, Document: map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"B": "monitor"}}}
	base := pack(t, "base", rule("acme.base", "B"))
	base.UID = "uid-of-base"
	cl := clusterOf(t, []*rulesv1alpha1.RulePack{pack(t, "x", rule("acme.x", "OLD")), base}, nil, quiet)
	x := pack(t, "x", rules...)
	x.UID = newUID
	cl.packs = []rulesv1alpha1.RulePack{*base, *x}
	cl.configs[0].UID = "uid-of-quiet"
	if recorded {
		key := types.NamespacedName{Namespace: "ns", Name: "gateway"}
		cl.uids = map[types.NamespacedName]*resource.PublishedUIDs{key: {
			Packs:   map[string]types.UID{"x": deletedUID, "base": base.UID},
			Configs: map[string]types.UID{"quiet": "uid-of-quiet"}}}
	}
	return cl, x
}

// TestRecreatedPackIsANewcomer: incumbency goes by object, not name (README "Incumbency
// goes by object, not name"; incumbents are taken first, bundle.Assemble rule 2). A
// RulePack created again under the name of a published one is at the published
// generation, 1, again; the webhook tells the two apart by the UIDs the bundle
// ConfigMap records, as the controller does, so it judges the new object's rules as
// those of a pack not published yet — a reference to them is warned about
// ([OAR-EVAL-13]), not refused; a configuration naming them waits for them
// ([OAR-CFG-4]); a duplicate of them is warned about ([OAR-DOC-9]) — and the deleted
// object's rules as nobody's.
func TestRecreatedPackIsANewcomer(t *testing.T) {
	ctx := context.Background()
	newX := []map[string]any{rule("acme.x", "NEW")}

	t.Run("a reference to its rule", func(t *testing.T) {
		cl, _ := recreatedX(t, true, newX...)
		y := pack(t, "y", with(rule("acme.y", "R"), "overrides", []any{"acme.x/NEW"}))
		ws, admitted := verdict(t, func() (admission.Warnings, error) { return (&RulePackValidator{Cluster: cl}).ValidateCreate(ctx, y) })
		if !admitted {
			t.Fatalf("refused, warnings %q", ws)
		}
		hasWarning(t, ws, "[OAR-EVAL-13] spec.rules[0].overrides[0]", "acme.x/NEW", `only RulePack "x" defines`, "not published")

		// Without identities the controller keeps x's incumbency by name, and so does the
		// webhook: x's generation 1 is the published one, which has no acme.x/NEW.
		cl, _ = recreatedX(t, false, newX...)
		if _, admitted := verdict(t, func() (admission.Warnings, error) { return (&RulePackValidator{Cluster: cl}).ValidateCreate(ctx, y) }); admitted {
			t.Error("admitted with no identities recorded: the published generation stands for x")
		}
	})

	t.Run("a configuration naming its rule", func(t *testing.T) {
		cl, _ := recreatedX(t, true, newX...)
		cfg := operatorConfig(t, "ns", "c", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{"acme.x/NEW"}})
		ws, admitted := verdict(t, func() (admission.Warnings, error) {
			return (&OperatorConfigValidator{Cluster: cl}).ValidateCreate(ctx, cfg)
		})
		if !admitted {
			t.Fatalf("refused, warnings %q", ws)
		}
		hasWarning(t, ws, "[OAR-CFG-4] spec.config.disable[0]", `RulePack "x"`, "not published yet")
	})

	t.Run("a duplicate of its rule", func(t *testing.T) {
		cl, _ := recreatedX(t, true, newX...)
		z := pack(t, "z", rule("acme.x", "NEW"))
		ws, admitted := verdict(t, func() (admission.Warnings, error) { return (&RulePackValidator{Cluster: cl}).ValidateCreate(ctx, z) })
		if !admitted {
			t.Fatalf("refused, warnings %q", ws)
		}
		hasWarning(t, ws, "[OAR-DOC-9] spec.rules[0].id", "acme.x/NEW", `RulePack "x"`)
	})

	t.Run("the new object itself", func(t *testing.T) {
		// The new x makes the bare id B of "quiet" ambiguous ([OAR-CFG-8]): as a newcomer
		// it is held back, as the controller does, not the configuration left out; the
		// deleted x's acme.x/OLD is not a rule the new x dropped.
		cl, x := recreatedX(t, true, rule("acme.x", "NEW"), rule("acme.x", "B"))
		ws, admitted := verdict(t, func() (admission.Warnings, error) { return (&RulePackValidator{Cluster: cl}).ValidateCreate(ctx, x) })
		if !admitted || len(ws) != 1 {
			t.Fatalf("admitted %v, warnings %q", admitted, ws)
		}
		hasWarning(t, ws, "[OAR-CFG-8]", `OperatorConfig "quiet" spec.config.enforcement.B`, "acme.x/B", "hold this pack back")
	})

	t.Run("a Capability update it does not load against", func(t *testing.T) {
		// The new x needs the mcp profile, which the Capability does not provide; the
		// published x loads, so the update is admitted, with a warning about the new x.
		cl, _ := recreatedX(t, true, with(rule("acme.x", "NEW"), "requires", map[string]any{"profiles": []any{"tool", "mcp"}}))
		old := cl.capabilities[0]
		updated := old.DeepCopy()
		updated.Spec.Anchors.Host = append(updated.Spec.Anchors.Host, "gateway.post_render")
		ws, admitted := verdict(t, func() (admission.Warnings, error) {
			return (&CapabilityValidator{Cluster: cl}).ValidateUpdate(ctx, old, updated)
		})
		if !admitted {
			t.Fatalf("refused, warnings %q", ws)
		}
		hasWarning(t, ws, "[OAR-FACT-19]", `RulePack "x" spec.rules[0].requires.profiles[1]`, "acme.x/NEW")
	})
}

// TestClientClusterReadsPublishedUIDs: the webhook reads the identities the controller
// records with the bundle (resource.PublishedUIDsAnnotation), and follows them when a
// pack is deleted and created again with the same rules: the same name, generation and
// rules, published for another object.
func TestClientClusterReadsPublishedUIDs(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	x := rulePack(t, ns, "x", "gateway", 0, []map[string]any{rule("acme.x", "A")})
	mustCreate(t, x)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{x})

	cl := &ClientCluster{Reader: k8s}
	key := types.NamespacedName{Namespace: ns, Name: "gateway"}
	publishedUID := func() (bool, string) {
		b, uids, err := cl.Bundle(ctx, key)
		switch {
		case err != nil:
			return false, err.Error()
		case b == nil || uids == nil:
			return false, fmt.Sprintf("bundle %v, identities %v", b, uids)
		}
		return uids.Packs["x"] == x.UID, fmt.Sprintf("x is published for %q, the live x is %q", uids.Packs["x"], x.UID)
	}
	eventually(t, "the identity of x", publishedUID)
	first := x.UID

	if err := k8s.Delete(ctx, x); err != nil {
		t.Fatal(err)
	}
	x = rulePack(t, ns, "x", "gateway", 0, []map[string]any{rule("acme.x", "A")})
	mustCreate(t, x)
	if x.UID == first {
		t.Fatal("the API server gave the new x the deleted one's UID")
	}
	eventually(t, "the identity of the new x", publishedUID)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(x), x); err != nil || x.Generation != 1 {
		t.Fatalf("the new x: generation %d, %v", x.Generation, err)
	}
}

// TestRecreatedConfigurationIsANewcomer: a configuration is told apart by object like a
// pack. The bundle publishes OperatorConfig "quiet" (acme.base/B disabled) of the object
// uid-of-quiet; when that object was deleted and another created under its name, the
// controller has not published since, and the published document is nobody's: an
// update of RulePack "base" that drops acme.base/B would not leave out a published
// configuration, and the controller would not hold it back for one (the new "quiet" is
// a newcomer, bundle.Assemble rule 3), so the webhook does not warn that it would.
// The same update, with "quiet" still the published object, is warned about.
func TestRecreatedConfigurationIsANewcomer(t *testing.T) {
	ctx := context.Background()
	quiet := bundle.Config{Name: "quiet", Generation: 1, Document: map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/B"}}}
	base := pack(t, "base", rule("acme.base", "B"))
	base.UID = "uid-of-base"
	edited := base.DeepCopy()
	edited.Generation = 2
	edited.Spec.Rules = rawRules(t, []map[string]any{rule("acme.base", "C")})
	update := func(live types.UID) []string {
		cl := clusterOf(t, []*rulesv1alpha1.RulePack{base}, nil, quiet)
		cl.uids = map[types.NamespacedName]*resource.PublishedUIDs{{Namespace: "ns", Name: "gateway"}: {
			Packs: map[string]types.UID{"base": base.UID}, Configs: map[string]types.UID{"quiet": "uid-of-quiet"}}}
		cfg := operatorConfig(t, "ns", "quiet", "gateway", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.base/C": "monitor"}})
		cfg.UID = live
		cl.configs = []rulesv1alpha1.OperatorConfig{*cfg}
		ws, admitted := verdict(t, func() (admission.Warnings, error) {
			return (&RulePackValidator{Cluster: cl}).ValidateUpdate(ctx, base, edited)
		})
		if !admitted {
			t.Fatalf("refused, warnings %q", ws)
		}
		return ws
	}

	hasWarning(t, update("uid-of-quiet"), "[OAR-CFG-4]", `OperatorConfig "quiet" spec.config.disable[0]`, "hold this update back")
	for _, w := range update("uid-of-the-new-quiet") {
		if strings.Contains(w, `OperatorConfig "quiet"`) {
			t.Errorf("warned about the deleted quiet's published document as if it were the live one's: %s", w)
		}
	}
}

// TestClientClusterListsLiveConfigurations: the configurations the webhook tells apart
// from the published ones are those naming the Capability that are not being deleted
// (a finalizer holding one): a configuration being deleted is left out of the next
// bundle whatever it names, as the controller assembles.
func TestClientClusterListsLiveConfigurations(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	doc := map[string]any{"oar_config": "1.0"}
	live := operatorConfig(t, ns, "live", "gateway", doc)
	mustCreate(t, live)
	mustCreate(t, operatorConfig(t, ns, "elsewhere", "other", doc))
	held := operatorConfig(t, ns, "held", "gateway", doc)
	held.Finalizers = []string{"example.com/hold"}
	mustCreate(t, held)
	t.Cleanup(func() {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(held), held); err == nil {
			// A merge patch, not an update: the manager's controllers write the object
			// too, and a stale resourceVersion would leave it held.
			release := client.MergeFrom(held.DeepCopy())
			held.Finalizers = nil
			if err := k8s.Patch(ctx, held, release); err != nil {
				t.Errorf("release %s: %v", held.Name, err)
			}
		}
	})
	if err := k8s.Delete(ctx, held); err != nil {
		t.Fatal(err)
	}

	got, err := (&ClientCluster{Reader: k8s}).OperatorConfigs(ctx, types.NamespacedName{Namespace: ns, Name: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "live" || got[0].UID != live.UID {
		names := make([]string, len(got))
		for i := range got {
			names[i] = got[i].Name
		}
		t.Errorf("configurations %v; want only live", names)
	}
}
