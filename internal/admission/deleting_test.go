package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// What became of the published RulePack "gone" and OperatorConfig "quiet" (fates).
const (
	stillThere  = "still there"
	beingGone   = "being deleted"
	goneAlready = "deleted"
	boundAway   = "bound to another Capability"
	// recreated: another object holds each name now, gone's without acme.gone/G; only
	// with the identities recorded is it told apart.
	recreated = "created again"
)

// withGoneAndQuiet returns the cluster in which RulePack "base" (acme.base/B and K),
// RulePack "gone" (acme.gone/G, which overrides acme.base/B) and OperatorConfig "quiet"
// (acme.base/B disabled) are published, base still the object it was published for; gone
// and quiet are in the state fate, the bundle not published since. recorded says
// whether the bundle records whose each is (not for a ConfigMap written before that).
func withGoneAndQuiet(t *testing.T, fate string, recorded bool) (*memoryCluster, *rulesv1alpha1.RulePack) {
	t.Helper()
	base := pack(t, "base", rule("acme.base", "B"), rule("acme.base", "K"))
	base.UID = "uid-of-base"
	gone := pack(t, "gone", with(rule("acme.gone", "G"), "overrides", []any{"acme.base/B"}))
	gone.UID = "uid-of-gone"
	quiet := bundle.Config{Name: "quiet", Generation: 1, Document: map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/B"}}}
	cl := clusterOf(t, []*rulesv1alpha1.RulePack{base, gone}, nil, quiet)
	cl.configs[0].UID = "uid-of-quiet"
	if recorded {
		cl.uids = map[types.NamespacedName]*resource.PublishedUIDs{{Namespace: "ns", Name: "gateway"}: {
			Packs: map[string]types.UID{"base": base.UID, "gone": gone.UID}, Configs: map[string]types.UID{"quiet": "uid-of-quiet"}}}
	}
	switch fate {
	case beingGone:
		now := metav1.Now()
		for _, o := range []metav1.Object{&cl.packs[1], &cl.configs[0]} {
			o.SetDeletionTimestamp(&now)
			o.SetFinalizers([]string{"example.com/hold"})
		}
	case goneAlready:
		cl.packs, cl.configs = cl.packs[:1], nil
	case boundAway:
		cl.packs[1].Spec.CapabilityRef.Name = "other"
		cl.configs[0].Spec.CapabilityRef.Name = "other"
	case recreated:
		again := pack(t, "gone", rule("acme.gone", "H"))
		again.UID = "uid-of-the-new-gone"
		cl.packs[1] = *again
		cl.configs[0].UID = "uid-of-the-new-quiet"
	}
	return cl, base
}

// assembled is what the controller publishes of cl's objects with base updated to
// edited, when not nil, and the configurations added created: the objects being deleted
// are not its input, and one holding a name the bundle records for another object is a
// newcomer (controllers.BundleReconciler).
func assembled(t *testing.T, cl *memoryCluster, edited *rulesv1alpha1.RulePack, added ...*rulesv1alpha1.OperatorConfig) *bundle.Result {
	t.Helper()
	key := types.NamespacedName{Namespace: "ns", Name: "gateway"}
	in := bundle.Input{Current: cl.bundles[key]}
	in.Capability = in.Current.Capability
	uids := cl.uids[key]
	packs, _ := cl.RulePacks(context.Background(), key)
	for i := range packs {
		p := &packs[i]
		if edited != nil && p.Name == edited.Name {
			p = edited
		}
		pi := resource.AssemblyPack(p)
		pi.NewIdentity = uids.NewPack(p.Name, p.UID)
		in.Packs = append(in.Packs, pi)
	}
	configs, _ := cl.OperatorConfigs(context.Background(), key)
	for _, c := range added {
		configs = append(configs, *c)
	}
	for i := range configs {
		ci := resource.AssemblyConfig(&configs[i])
		ci.NewIdentity = uids.NewConfig(configs[i].Name, configs[i].UID)
		in.Configs = append(in.Configs, ci)
	}
	res, err := bundle.Assemble(in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDeletedPublishedResourcesAreNoIncumbents: a published pack or configuration whose
// object is being deleted (a finalizer holding it), is deleted, or names another
// Capability now is left out of the next bundle, whatever else changes, as the
// controller assembles: it holds nothing back and defines no rule for others. The webhook judges a pack as the controller does — not
// against the bundle that still holds them — so it does not warn that an update would
// make "gone" stop loading or be held back for "quiet" ([OAR-CFG-4]), nor that a pack
// duplicates gone's rule ([OAR-DOC-9]); and it refuses a reference to gone's rule,
// which no pack defines once gone is left out ([OAR-EVAL-13]). With the bundle's
// identities recorded or not.
func TestDeletedPublishedResourcesAreNoIncumbents(t *testing.T) {
	ctx := context.Background()
	for _, fate := range []string{stillThere, beingGone, goneAlready, boundAway} {
		for _, recorded := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, identities recorded %v", fate, recorded), func(t *testing.T) {
				cl, base := withGoneAndQuiet(t, fate, recorded)
				v := &RulePackValidator{Cluster: cl}
				edited := base.DeepCopy()
				edited.Generation = 2
				edited.Spec.Rules = rawRules(t, []map[string]any{rule("acme.base", "K")})
				res := assembled(t, cl, edited)
				ws, admitted := verdict(t, func() (admission.Warnings, error) { return v.ValidateUpdate(ctx, base, edited) })
				twin, twinAdmitted := verdict(t, func() (admission.Warnings, error) {
					return v.ValidateCreate(ctx, pack(t, "twin", rule("acme.gone", "G")))
				})
				_, refErr := v.ValidateCreate(ctx, pack(t, "user", with(rule("acme.user", "U"), "overrides", []any{"acme.gone/G"})))
				if !admitted || !twinAdmitted {
					t.Fatalf("refused: the update %v (%q), the twin %v (%q)", !admitted, ws, !twinAdmitted, twin)
				}

				if fate == stillThere {
					if o := res.Packs["base"]; o.Published || o.Reason != bundle.ReasonConflict {
						t.Fatalf("the controller publishes base's update with gone and quiet there: %+v", o)
					}
					hasWarning(t, ws, "[OAR-EVAL-13]", `RulePack "gone" spec.rules[0].overrides[0]`, "stop loading")
					hasWarning(t, ws, "[OAR-CFG-4]", `OperatorConfig "quiet" spec.config.disable[0]`, "hold this update back (Conflict)")
					hasWarning(t, twin, "[OAR-DOC-9]", "acme.gone/G", `RulePack "gone"`)
					if refErr != nil {
						t.Errorf("a reference to the published acme.gone/G is refused: %v", refErr)
					}
					return
				}
				if o := res.Packs["base"]; !o.Published || len(res.Bundle.Packs) != 1 || len(res.Bundle.Configs) != 0 {
					t.Fatalf("the controller holds base's update back, or keeps gone or quiet: %+v, %d packs, %d configurations",
						o, len(res.Bundle.Packs), len(res.Bundle.Configs))
				}
				if len(ws) > 0 {
					t.Errorf("the update, which the controller publishes, is warned about: %q", ws)
				}
				if len(twin) > 0 {
					t.Errorf("a pack defining gone's rule is warned about: %q", twin)
				}
				if refErr == nil || !strings.Contains(refErr.Error(), "OAR-EVAL-13") {
					t.Errorf("a reference to gone's rule, which no pack defines once gone is left out: %v; want a [OAR-EVAL-13] refusal", refErr)
				}
			})
		}
	}
}

// TestConfigurationNamingARetiredPacksRule: a configuration naming acme.gone/G, which
// only the published generation of RulePack "gone" defines, applies while gone is still
// there. Once gone is being deleted, is deleted, names another Capability, or is another
// object (created again under its name, without G), the controller leaves that
// generation out of the next bundle, and the configuration with it, as naming a rule
// that is not loaded ([OAR-CFG-4]); the webhook refuses it then, as one naming a rule no
// pack defines, though the bundle not published since still holds G. By its qualified
// and its bare identifier, with the bundle's identities recorded or not.
func TestConfigurationNamingARetiredPacksRule(t *testing.T) {
	ctx := context.Background()
	for _, fate := range []string{stillThere, beingGone, goneAlready, boundAway, recreated} {
		for _, recorded := range []bool{true, false} {
			if fate == recreated && !recorded {
				continue // without identities the new gone is the published one, by name
			}
			for _, ref := range []string{"acme.gone/G", "G"} {
				t.Run(fmt.Sprintf("%s, identities recorded %v, %s", fate, recorded, ref), func(t *testing.T) {
					cl, _ := withGoneAndQuiet(t, fate, recorded)
					tuning := operatorConfig(t, "ns", "tuning", "gateway", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{ref: "monitor"}})
					tuning.UID, tuning.Generation = "uid-of-tuning", 1
					o := assembled(t, cl, nil, tuning).Configs["tuning"]
					ws, err := (&OperatorConfigValidator{Cluster: cl}).ValidateCreate(ctx, tuning)

					if fate == stillThere {
						if !o.Published {
							t.Fatalf("the controller leaves the configuration out with gone there: %+v", o)
						}
						if err != nil || len(ws) > 0 {
							t.Errorf("refused (%v) or warned (%q) though the controller publishes it", err, ws)
						}
						return
					}
					if o.Published || o.Reason != bundle.ReasonLoadFailed || !hasClause(o.Errors, "OAR-CFG-4") {
						t.Fatalf("the controller publishes the configuration, or leaves it out for another reason: %+v", o)
					}
					if err == nil {
						t.Fatalf("admitted (warnings %q) though the controller leaves it out: G is not loaded once gone is", ws)
					}
					hasCause(t, causes(t, err), "spec.config.enforcement."+ref, "OAR-CFG-4", ref)
				})
			}
		}
	}
}

// TestHeldBundleServingDeletedResources: while a Capability is held back (narrowed
// without the webhook), the bundle that serves still holds a pack and a configuration
// being deleted (README, Troubleshooting, "Deleting"), and records their objects. The
// controller leaves them out of the bundle it publishes once the hold clears, so an
// update of RulePack "base" that gone's override and quiet's disable need is admitted
// without a warning about either through the API server, and published when the hold
// clears; a configuration naming gone's rule is refused ([OAR-CFG-4]), and the
// controller leaves it out once the hold clears when it is created past the webhook.
// Before they are deleted, the same update is warned about, and the configuration
// admitted.
func TestHeldBundleServingDeletedResources(t *testing.T) {
	needEnv(t)
	skipAdmissionByLabel(t)
	ns := namespace(t)
	ctx := context.Background()
	gateway := capabilityObject(ns, "gateway", gatewaySpec())
	gateway.Labels = map[string]string{skipAdmission: "true"}
	mustCreate(t, gateway)
	base := rulePack(t, ns, "base", "gateway", 0, []map[string]any{rule("acme.base", "B"), rule("acme.base", "K")})
	needy := rulePack(t, ns, "needy", "gateway", 0, []map[string]any{with(rule("acme.needy", "N"),
		"requires", map[string]any{"profiles": []any{"tool", "session"}}, "when", nil, "copy", map[string]any{"what": "Tool {{ tool }}."})})
	gone := rulePack(t, ns, "gone", "gateway", 0, []map[string]any{with(rule("acme.gone", "G"), "overrides", []any{"acme.base/B"})})
	quiet := operatorConfig(t, ns, "quiet", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/B"}})
	for _, o := range []client.Object{base, needy, gone, quiet} {
		if o == gone || o == quiet {
			o.SetFinalizers([]string{"example.com/hold"})
			t.Cleanup(func() { release(t, o) })
		}
		mustCreate(t, o)
	}
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base, needy, gone}, "quiet")

	wc, warned := warningClient(t)
	dropB := func() { base.Spec.Rules = rawRules(t, []map[string]any{rule("acme.base", "K")}) }
	warned.take()
	updateSpec(t, wc, base, dropB, client.DryRunAll)
	ws := warned.take()
	hasWarning(t, ws, `RulePack "gone"`, "stop loading")
	hasWarning(t, ws, `OperatorConfig "quiet"`, "hold this update back")
	tuning := operatorConfig(t, ns, "tuning", "gateway", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.gone/G": "monitor"}})
	if err := wc.Create(ctx, tuning.DeepCopy(), client.DryRunAll); err != nil {
		t.Fatalf("a configuration naming gone's rule, gone there: %v", err)
	}
	if ws := warned.take(); len(ws) > 0 {
		t.Errorf("a configuration naming gone's rule, gone there, is warned about: %q", ws)
	}

	profiles := gateway.Spec.Profiles
	updateSpec(t, k8s, gateway, func() {
		gateway.Spec.Profiles = slices.DeleteFunc(slices.Clone(profiles), func(p string) bool { return p == "session" })
	})
	eventually(t, "the Capability to be held back", func() (bool, string) {
		c := &rulesv1alpha1.Capability{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(gateway), c); err != nil {
			return false, err.Error()
		}
		ready := meta.FindStatusCondition(c.Status.Conditions, rulesv1alpha1.ConditionReady)
		return ready != nil && ready.ObservedGeneration == c.Generation && ready.Reason == bundle.ReasonCapabilityNarrowed, fmt.Sprintf("Ready %+v", ready)
	})
	for _, o := range []client.Object{gone, quiet} {
		if err := k8s.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		deletingInCache(t, o)
	}
	if held := bundleOf(t, ns, "gateway"); len(held.Packs) != 3 || len(held.Configs) != 1 {
		t.Fatalf("the held bundle no longer holds gone and quiet: %d packs, %d configurations", len(held.Packs), len(held.Configs))
	}

	updateSpec(t, wc, base, dropB, client.DryRunAll)
	for _, w := range warned.take() {
		if strings.Contains(w, `"gone"`) || strings.Contains(w, `"quiet"`) {
			t.Errorf("warned about what the held bundle serves of an object being deleted: %s", w)
		}
	}
	err := wc.Create(ctx, tuning.DeepCopy(), client.DryRunAll)
	hasCause(t, causes(t, err), "spec.config.enforcement.acme.gone/G", "OAR-CFG-4", "acme.gone/G")
	tuning.Labels = map[string]string{skipAdmission: "true"}
	mustCreate(t, tuning)

	updateSpec(t, k8s, base, dropB)
	updateSpec(t, k8s, gateway, func() { gateway.Spec.Profiles = profiles })
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base, needy})
	if b := bundleOf(t, ns, "gateway"); len(b.Packs) != 2 || len(b.Configs) != 0 {
		t.Errorf("once the hold clears, the bundle holds %d packs and %d configurations; want base and needy only", len(b.Packs), len(b.Configs))
	}
}

// updateSpec reads obj afresh, applies change to it and updates it through c, again
// when the controller wrote the object's status in between.
func updateSpec(t *testing.T, c client.Client, obj client.Object, change func(), opts ...client.UpdateOption) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return c.Update(context.Background(), obj, opts...)
	})
	if err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

// release removes the finalizers of obj, if it still exists, with a merge patch: the
// controller writes its status meanwhile.
func release(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetFinalizers(nil)
	if err := k8s.Patch(ctx, obj, patch); err != nil {
		t.Errorf("release %s: %v", obj.GetName(), err)
	}
}

// deletingInCache waits until the webhook's cache sees obj being deleted.
func deletingInCache(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, "the webhook's cache to see "+obj.GetName()+" being deleted", func() (bool, string) {
		mgrMu.Lock()
		reader := cached
		mgrMu.Unlock()
		got := obj.DeepCopyObject().(client.Object)
		if err := reader.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			return false, err.Error()
		}
		return got.GetDeletionTimestamp() != nil, "no deletionTimestamp"
	})
}

// bundleOf is the bundle the ConfigMap of Capability capability in namespace ns holds.
func bundleOf(t *testing.T, ns, capability string) *bundle.Bundle {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: resource.BundleName(capability)}, cm); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Decode(cm.Data, cm.BinaryData)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLiveConfigurationNamingARetiredPacksRule: OperatorConfig "mixed", published and
// still there, names acme.gone/G and disables acme.base/B. Once RulePack "gone" is no
// incumbent (being deleted, deleted, bound elsewhere, created again), the controller
// leaves mixed out of the next bundle with it ([OAR-CFG-4]), whatever else changes: mixed
// holds nothing back. So an update of RulePack "base" dropping B, which the controller
// publishes, is admitted without the warning that it would be held back for mixed; while
// gone is there, it is held back, and warned about.
func TestLiveConfigurationNamingARetiredPacksRule(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "gateway"}
	for _, fate := range []string{stillThere, beingGone, goneAlready, boundAway, recreated} {
		t.Run(fate, func(t *testing.T) {
			cl, base := withGoneAndQuiet(t, fate, true)
			doc := map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.gone/G": "monitor"}, "disable": []any{"acme.base/B"}}
			published := cl.bundles[key]
			published.Configs = append([]bundle.Config{{Name: "mixed", Generation: 1, Document: doc}}, published.Configs...)
			if _, err := bundle.Load(published); err != nil {
				t.Fatalf("the test's bundle does not load: %v", err)
			}
			mixed := operatorConfig(t, "ns", "mixed", "gateway", doc)
			mixed.UID, mixed.Generation = "uid-of-mixed", 1
			cl.configs = append(cl.configs, *mixed)
			cl.uids[key].Configs["mixed"] = mixed.UID

			edited := base.DeepCopy()
			edited.Generation = 2
			edited.Spec.Rules = rawRules(t, []map[string]any{rule("acme.base", "K")})
			res := assembled(t, cl, edited)
			ws, admitted := verdict(t, func() (admission.Warnings, error) {
				return (&RulePackValidator{Cluster: cl}).ValidateUpdate(ctx, base, edited)
			})
			if !admitted {
				t.Fatalf("refused: %q", ws)
			}

			if fate == stillThere {
				if o := res.Packs["base"]; o.Published || o.Reason != bundle.ReasonConflict {
					t.Fatalf("the controller publishes base's update with gone and mixed there: %+v", o)
				}
				hasWarning(t, ws, "[OAR-CFG-4]", `OperatorConfig "mixed" spec.config.disable[0]`, "hold this update back (Conflict)")
				return
			}
			if o := res.Packs["base"]; !o.Published || res.Configs["mixed"].Published {
				t.Fatalf("the controller holds base's update back (%+v), or keeps mixed (%+v)", o, res.Configs["mixed"])
			}
			for _, w := range ws {
				if strings.Contains(w, `"mixed"`) {
					t.Errorf("warned about mixed, which the controller leaves out with gone: %s", w)
				}
			}
		})
	}
}
