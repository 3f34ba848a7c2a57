package controllers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/resource"
)

var ctx = context.Background()

// TestPublishesABundleTheEngineLoads: a valid capability, two packs and a config give
// one bundle, owned by the Capability, whose digest matches its content and which the
// engine loads; every resource says Ready.
func TestPublishesABundleTheEngineLoads(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	p1 := pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "SHELL"), rule("acme.security", "FETCH")))
	p2 := pack(ns, "ops", c.Name, rulesJSON(t, rule("acme.ops", "SLOW")))
	cfg := operatorConfig(t, ns, "rollout", c.Name, 0, map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.ops/SLOW": "monitor"}})
	create(t, p1)
	create(t, p2)
	create(t, cfg)

	b, cm := waitBundle(t, ns, c.Name, "both packs and the config", func(b *bundle.Bundle) bool {
		return len(b.Packs) == 2 && len(b.Configs) == 1
	})
	if got := cm.Annotations[resource.DigestAnnotation]; got != b.Digest {
		t.Errorf("digest annotation %q, bundle digest %q", got, b.Digest)
	}
	if d, err := b.ComputeDigest(); err != nil || d != b.Digest {
		t.Errorf("recomputed digest %q (%v), published %q", d, err, b.Digest)
	}
	owner := metav1.GetControllerOf(cm)
	if owner == nil || owner.Kind != "Capability" || owner.Name != c.Name {
		t.Errorf("bundle ConfigMap controller owner: %+v", owner)
	}
	loaded, err := bundle.Load(b)
	if err != nil {
		t.Fatalf("the published bundle does not load: %v", err)
	}
	if n := len(loaded.RuleSet.Rules); n != 3 {
		t.Errorf("loaded %d rules, want 3", n)
	}
	waitReady(t, p1, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, p2, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	// Status catches up with the bundle once the burst of creates has settled.
	eventually(t, "pack status naming the published bundle", func() (bool, string) {
		conditionsOf(t, p1)
		st := p1.Status
		ok := st.RuleCount == 2 && st.PublishedGeneration != nil && *st.PublishedGeneration == p1.Generation &&
			st.Bundle != nil && st.Bundle.Digest == b.Digest && st.Portability != nil && st.Portability.Portable == 2
		return ok, fmt.Sprintf("%+v bundle %+v portability %+v", st, st.Bundle, st.Portability)
	})
	eventually(t, "capability status listing the bundle", func() (bool, string) {
		conditionsOf(t, c)
		st := c.Status
		return st.RuleCount == 3 && len(st.Packs) == 2 && st.Bundle != nil && st.Bundle.ConfigMapName == resource.BundleName(c.Name) &&
			st.Bundle.Digest == b.Digest, fmt.Sprintf("%+v bundle %+v", st, st.Bundle)
	})
}

// TestInvalidRuleIsReportedInStatus: the engine's refusal reaches status naming the
// clause and the field, with the suggestion for an unknown name in a field of its own,
// and nothing of the pack is published.
func TestInvalidRuleIsReportedInStatus(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	bad := pack(ns, "typo", c.Name, rulesJSON(t, rule("acme.security", "OK"), rule("acme.security", "TYPO", "when", `tol == "x"`)))
	create(t, bad)
	cond := waitReady(t, bad, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	if !strings.Contains(cond.Message, "nothing of it is published") {
		t.Errorf("Ready message should say nothing serves: %s", cond.Message)
	}
	var found bool
	for _, e := range bad.Status.LoadErrors {
		if e.Clause == "OAR-FACT-3" && e.Field == "spec.rules[1].when" && e.Rule == "acme.security/TYPO" && e.Index == 1 && e.Value == `tol == "x"` && e.Offset != nil && *e.Offset == 0 &&
			e.Suggestion == "tool" && strings.HasSuffix(e.Message, `did you mean "tool"?`) {
			found = true
		}
	}
	if !found {
		t.Errorf(`want a loadErrors entry for OAR-FACT-3 at spec.rules[1].when suggesting "tool", got %+v`, bad.Status.LoadErrors)
	}
	if bad.Status.PublishedGeneration != nil {
		t.Errorf("publishedGeneration %d for a pack that never loaded", *bad.Status.PublishedGeneration)
	}
	waitBundle(t, ns, c.Name, "a bundle without the bad pack", func(b *bundle.Bundle) bool { return len(b.Packs) == 0 })
}

// TestDuplicateIdentifierKeepsTheEarlierPack: two packs defining one qualified id — the
// later is refused as a conflict naming the earlier, which stays.
func TestDuplicateIdentifierKeepsTheEarlierPack(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	first := pack(ns, "first", c.Name, rulesJSON(t, rule("acme.security", "SHELL")))
	create(t, first)
	waitReady(t, first, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	second := pack(ns, "second", c.Name, rulesJSON(t, rule("acme.security", "OTHER"), rule("acme.security", "SHELL")))
	create(t, second)
	cond := waitReady(t, second, metav1.ConditionFalse, rulesv1alpha1.ReasonConflict)
	if !strings.Contains(cond.Message, `"first"`) || !strings.Contains(cond.Message, "acme.security/SHELL") {
		t.Errorf("conflict message should name the pack and the rule: %s", cond.Message)
	}
	waitReady(t, first, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	b, _ := published(t, ns, c.Name)
	if got := packNames(b); len(got) != 1 || got["first"] == 0 {
		t.Errorf("bundle packs %v, want only first", got)
	}
}

// TestConfigNamingAnAbsentRuleIsLeftOut: [OAR-CFG-4] keeps the configuration out of the
// bundle, and its status says why.
func TestConfigNamingAnAbsentRuleIsLeftOut(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	p := pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "SHELL")))
	create(t, p)
	cfg := operatorConfig(t, ns, "stale", c.Name, 0, map[string]any{"oar_config": "1.0", "disable": []any{"acme.security/GONE"}})
	create(t, cfg)
	waitReady(t, cfg, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	if len(cfg.Status.LoadErrors) == 0 || cfg.Status.LoadErrors[0].Clause != "OAR-CFG-4" || cfg.Status.LoadErrors[0].Field != "spec.config.disable[0]" {
		t.Errorf("loadErrors %+v", cfg.Status.LoadErrors)
	}
	b, _ := waitBundle(t, ns, c.Name, "the pack without the config", func(b *bundle.Bundle) bool { return len(b.Packs) == 1 })
	if len(b.Configs) != 0 {
		t.Errorf("bundle carries configs %v", b.Configs)
	}
}

// shellDecision evaluates a shell tool call against a published bundle.
func shellDecision(t *testing.T, b *bundle.Bundle) string {
	t.Helper()
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatalf("the published bundle does not load: %v", err)
	}
	d := l.Program.Evaluate(engine.NewMemoryRuntime(), &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s",
		Facts: map[string]any{"tool": "shell"}, ToolCall: &engine.ToolCall{Name: "shell", Arguments: map[string]any{}}})
	return d.Decision
}

// TestPackEditNeverDropsAPublishedConfiguration (found in review): a rule shipped in
// monitor is raised to enforce by an OperatorConfig ([OAR-CFG-3]). An edit of the pack
// removing another rule the configuration names ([OAR-CFG-4]) left the configuration
// out, so the block silently became monitor-only while the Capability said Ready. The
// edit is held back instead, as a Conflict naming the configuration; changing the
// configuration with it publishes both.
func TestPackEditNeverDropsAPublishedConfiguration(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	block := rule("acme.security", "BLOCK_SHELL", "effect", "block", "enforcement", "monitor")
	p := pack(ns, "security", c.Name, rulesJSON(t, block, rule("acme.security", "OTHER")))
	create(t, p)
	cfg := operatorConfig(t, ns, "promote", c.Name, 0, map[string]any{"oar_config": "1.0",
		"enforcement": map[string]any{"acme.security/BLOCK_SHELL": "enforce", "acme.security/OTHER": "enforce"}})
	create(t, cfg)
	b, _ := waitBundle(t, ns, c.Name, "pack and configuration", func(b *bundle.Bundle) bool { return len(b.Packs) == 1 && len(b.Configs) == 1 })
	if got := shellDecision(t, b); got != "block" {
		t.Fatalf("before the edit a shell call resolves to %q, want block", got)
	}
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	first := p.Generation

	update(t, p, func() { p.Spec.Rules = rulesJSON(t, block) })
	cond := waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonConflict)
	if !strings.Contains(cond.Message, `configuration "promote"`) || !strings.Contains(cond.Message, "OAR-CFG-4") ||
		p.Status.PublishedGeneration == nil || *p.Status.PublishedGeneration != first {
		t.Errorf("pack message %q, publishedGeneration %v; want the configuration and [OAR-CFG-4] named, generation %d serving",
			cond.Message, p.Status.PublishedGeneration, first)
	}
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	b, _ = published(t, ns, c.Name)
	if packNames(b)["security"] != first || len(b.Configs) != 1 || shellDecision(t, b) != "block" {
		t.Errorf("bundle %s: want security@%d and promote, a shell call blocked", describeBundle(b), first)
	}

	update(t, cfg, func() {
		cfg.Spec.Config.Raw = []byte(`{"oar_config":"1.0","enforcement":{"acme.security/BLOCK_SHELL":"enforce"}}`)
	})
	b, _ = waitBundle(t, ns, c.Name, "the edit and the configuration's change", func(b *bundle.Bundle) bool {
		return packNames(b)["security"] == p.Generation && len(b.Configs) == 1 && b.Configs[0].Generation == cfg.Generation
	})
	if got := shellDecision(t, b); got != "block" {
		t.Errorf("after both changes a shell call resolves to %q, want block", got)
	}
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

// TestPublishedConfigurationLeftOutMakesTheCapabilityNotReady: deleting a pack is
// allowed ([OAR-OPS-7]), and a published configuration naming its rule no longer
// applies ([OAR-CFG-4]), with whatever else it raised to enforce. Nothing can be held
// back for it, so the Capability says so (Ready=False, LeftOut) until it is resolved.
func TestPublishedConfigurationLeftOutMakesTheCapabilityNotReady(t *testing.T) {
	ns := namespace(t)
	c, other, cfg := createPromotion(t, ns)
	waitBundle(t, ns, c.Name, "both packs and the configuration", func(b *bundle.Bundle) bool { return len(b.Packs) == 2 && len(b.Configs) == 1 })
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)

	if err := k8s.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, ns, c.Name, "security alone", func(b *bundle.Bundle) bool { return len(b.Packs) == 1 && len(b.Configs) == 0 })
	cond := waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonLeftOut)
	if !strings.Contains(cond.Message, `OperatorConfig "promote"`) {
		t.Errorf("Capability message %q does not name the configuration left out", cond.Message)
	}
	waitReady(t, cfg, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)

	update(t, cfg, func() {
		cfg.Spec.Config.Raw = []byte(`{"oar_config":"1.0","enforcement":{"acme.security/BLOCK_SHELL":"enforce"}}`)
	})
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

// TestNarrowedCapabilityIsHeldWithoutTheWebhook: this suite runs without the admission
// webhook, as a cluster does while it is down. Dropping a profile a published pack needs
// leaves the bundle as it is (digest unchanged), and the Capability says Ready=False,
// CapabilityNarrowed, naming the pack and the rule in the webhook's words, with a
// Warning Event; the pack says why it is held. Restoring the profile publishes the
// Capability again; narrowing it once more and then fixing the pack publishes too.
func TestNarrowedCapabilityIsHeldWithoutTheWebhook(t *testing.T) {
	ns := namespace(t)
	c, p := publishedPack(t, ns)
	good := p.Generation
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	before, _ := published(t, ns, c.Name)
	profiles := slices.Clone(c.Spec.Profiles)

	update(t, c, func() { c.Spec.Profiles = []string{"filesystem", "content"} })
	cond := waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed)
	for _, want := range []string{`RulePack "security"`, "acme.security/SHELL", "[OAR-FACT-19]",
		`published RulePack "security" would stop loading at spec.rules[0].requires.profiles[0]`, before.Digest} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("the Capability's Ready message does not say %q: %s", want, cond.Message)
		}
	}
	if !slices.ContainsFunc(c.Status.LoadErrors, func(e rulesv1alpha1.LoadError) bool {
		return e.Clause == "OAR-FACT-19" && e.Field == "spec.profiles" && e.Rule == "acme.security/SHELL"
	}) {
		t.Errorf("capability loadErrors %+v, want OAR-FACT-19 at spec.profiles", c.Status.LoadErrors)
	}
	if after, cm := published(t, ns, c.Name); after.Digest != before.Digest || cm.Annotations[resource.DigestAnnotation] != before.Digest {
		t.Errorf("the bundle changed from %s to %s (%s)", before.Digest, after.Digest, describeBundle(after))
	}
	pc := waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed)
	if !strings.Contains(pc.Message, fmt.Sprintf("generation %d still serves", good)) || !strings.Contains(pc.Message, "held back") ||
		p.Status.PublishedGeneration == nil || *p.Status.PublishedGeneration != good {
		t.Errorf("pack status %q, publishedGeneration %v; want it held with generation %d serving", pc.Message, p.Status.PublishedGeneration, good)
	}
	if !slices.ContainsFunc(p.Status.LoadErrors, func(e rulesv1alpha1.LoadError) bool {
		return e.Clause == "OAR-FACT-19" && e.Field == "spec.rules[0].requires.profiles[0]"
	}) {
		t.Errorf("pack loadErrors %+v, want OAR-FACT-19 at spec.rules[0].requires.profiles[0]", p.Status.LoadErrors)
	}
	eventually(t, "a CapabilityNarrowed Warning Event", func() (bool, string) {
		var events eventsv1.EventList
		if err := k8s.List(ctx, &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Reason == rulesv1alpha1.ReasonCapabilityNarrowed && e.Type == corev1.EventTypeWarning && e.Regarding.Name == c.Name &&
				strings.Contains(e.Note, `RulePack "security"`)
		}), fmt.Sprintf("%d events", len(events.Items))
	})

	update(t, c, func() { c.Spec.Profiles = profiles })
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	if after, _ := published(t, ns, c.Name); after.Digest != before.Digest {
		t.Errorf("restored, the bundle is %s, want %s", describeBundle(after), before.Digest)
	}

	update(t, c, func() { c.Spec.Profiles = []string{"filesystem", "content"} })
	waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed)
	fixed := rule("acme.security", "SHELL", "requires", map[string]any{"profiles": []any{"filesystem"}})
	delete(fixed, "when") // the tool fact needs the tool profile
	update(t, p, func() { p.Spec.Rules = rulesJSON(t, fixed) })
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitBundle(t, ns, c.Name, "the fixed pack under the narrowed capability", func(b *bundle.Bundle) bool {
		return packNames(b)["security"] == p.Generation && !slices.Contains(b.Capability["profiles"].([]any), any("tool"))
	})
}

// TestNarrowingWhileNoManagerRunsIsHeld: a Capability narrowed while no manager runs is
// the first generation the next manager sees; the bundle ConfigMap holds the previous
// one, so it is held back all the same.
func TestNarrowingWhileNoManagerRunsIsHeld(t *testing.T) {
	ns := namespace(t)
	c, _ := publishedPack(t, ns)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	before, _ := published(t, ns, c.Name)
	stopManager()
	update(t, c, func() { c.Spec.Profiles = []string{"filesystem", "content"} })
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed)
	if after, _ := published(t, ns, c.Name); after.Digest != before.Digest {
		t.Errorf("the bundle changed from %s to %s", before.Digest, describeBundle(after))
	}
}

// TestFirstPublicationOfANarrowCapability: with nothing published before (no bundle to
// keep), a capability that does not provide what a pack needs publishes what loads and
// is not Ready while that pack is left out, naming it; a pack failing on its own fault
// (a typo) does not count against the Capability.
func TestFirstPublicationOfANarrowCapability(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	c.Spec.Profiles = []string{"filesystem", "content"}
	p := pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "SHELL")))
	create(t, p)
	create(t, c)
	cond := waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed)
	for _, want := range []string{`RulePack "security"`, "[OAR-FACT-19]", "spec.rules[0].requires.profiles[0]", "acme.security/SHELL"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("the Capability's Ready message does not say %q: %s", want, cond.Message)
		}
	}
	waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	waitBundle(t, ns, c.Name, "a bundle without the pack", func(b *bundle.Bundle) bool { return len(b.Packs) == 0 })
	update(t, p, func() {
		p.Spec.Rules = rulesJSON(t, rule("acme.security", "SHELL", "requires", map[string]any{"profiles": []any{"filesystem"}}, "when", "pth == 1"))
	})
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

func hasClause(errs []rulesv1alpha1.LoadError, clause string) bool {
	for _, e := range errs {
		if e.Clause == clause {
			return true
		}
	}
	return false
}

// update re-reads obj, applies change and writes it, retrying on conflicts.
func update(t *testing.T, obj client.Object, change func()) {
	t.Helper()
	for range 10 {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		change()
		err := k8s.Update(ctx, obj)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("update %s: %v", obj.GetName(), err)
		}
	}
	t.Fatalf("update %s: kept conflicting", obj.GetName())
}

// publishedPack creates the sample Capability and a pack "security" of one rule, and
// waits for the pack to be published.
func publishedPack(t *testing.T, ns string) (*rulesv1alpha1.Capability, *rulesv1alpha1.RulePack) {
	t.Helper()
	c := sampleCapability(t, ns)
	create(t, c)
	p := pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "SHELL")))
	create(t, p)
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	return c, p
}

// badEditOfAPublishedPack creates a Capability and a pack "security", waits for the pack
// to be published, then edits it so it no longer loads. It returns both, the generation
// that was published and the pack's Ready condition after the edit.
func badEditOfAPublishedPack(t *testing.T, ns string) (*rulesv1alpha1.Capability, *rulesv1alpha1.RulePack, int64, *metav1.Condition) {
	t.Helper()
	c, p := publishedPack(t, ns)
	good := p.Generation
	update(t, p, func() { p.Spec.Rules = rulesJSON(t, rule("acme.security", "SHELL", "when", "tool ==")) })
	return c, p, good, waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
}

// TestBadEditKeepsLastPublishedGeneration: an edit the engine refuses leaves the previous
// generation serving, and status says which.
func TestBadEditKeepsLastPublishedGeneration(t *testing.T) {
	ns := namespace(t)
	c, p, good, cond := badEditOfAPublishedPack(t, ns)
	if p.Status.PublishedGeneration == nil || *p.Status.PublishedGeneration != good || !strings.Contains(cond.Message, fmt.Sprintf("generation %d still serves", good)) {
		t.Errorf("publishedGeneration %v, message %q; want generation %d serving", p.Status.PublishedGeneration, cond.Message, good)
	}
	b, _ := published(t, ns, c.Name)
	if packNames(b)["security"] != good {
		t.Errorf("bundle serves %v, want security@%d", packNames(b), good)
	}
}

// TestBundleIsOwnedByTheCapabilityThatExists: a bundle ConfigMap whose owner reference
// names an earlier Capability of the same name (deleted and created again before the
// controller saw it go) is taken over by the current one, so the garbage collector does
// not delete the bundle that serves it.
func TestBundleIsOwnedByTheCapabilityThatExists(t *testing.T) {
	ns := namespace(t)
	c, _ := publishedPack(t, ns)
	_, cm := published(t, ns, c.Name)
	cm.OwnerReferences[0].UID = "3f1c2d4e-0000-4000-8000-000000000000"
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the bundle owned by the current Capability again", func() (bool, string) {
		_, cm := published(t, ns, c.Name)
		return metav1.IsControlledBy(cm, c), fmt.Sprintf("owners %+v, Capability UID %s", cm.OwnerReferences, c.UID)
	})
}

// TestUnreadableEditKeepsLastPublishedGeneration: with the webhook down, the API server
// stores what its schema allows — here a configuration that is a string, not an object.
// The edit is refused ([OAR-CFG-1]) and the generation that was published keeps
// serving, as after any bad edit, rather than the configuration leaving the bundle.
func TestUnreadableEditKeepsLastPublishedGeneration(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	p := pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "SHELL"), rule("acme.security", "FETCH")))
	create(t, p)
	cfg := operatorConfig(t, ns, "quiet", c.Name, 0, map[string]any{"oar_config": "1.0", "disable": []any{"acme.security/FETCH"}})
	create(t, cfg)
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	good := cfg.Generation
	update(t, cfg, func() { cfg.Spec.Config = &apiextensionsv1.JSON{Raw: []byte(`"disable acme.security/FETCH"`)} })
	cond := waitReady(t, cfg, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	if cfg.Status.PublishedGeneration == nil || *cfg.Status.PublishedGeneration != good || !hasClause(cfg.Status.LoadErrors, "OAR-CFG-1") {
		t.Errorf("publishedGeneration %v, loadErrors %+v, message %q; want generation %d serving and OAR-CFG-1", cfg.Status.PublishedGeneration, cfg.Status.LoadErrors, cond.Message, good)
	}
	b, _ := published(t, ns, c.Name)
	if len(b.Configs) != 1 || b.Configs[0].Name != "quiet" || b.Configs[0].Generation != good {
		t.Errorf("bundle configurations %+v, want quiet@%d", b.Configs, good)
	}
}

// TestLostBundleIsRestored: the bundle ConfigMap deleted, or its data overwritten, while
// a pack's bad edit leaves its last good generation serving: the operator publishes the
// same bundle again, that generation included — the ConfigMap is where that generation's
// rules live, and losing it must not drop enforcement that was working.
func TestLostBundleIsRestored(t *testing.T) {
	ns := namespace(t)
	c, _, good, _ := badEditOfAPublishedPack(t, ns)
	want, cm := published(t, ns, c.Name)
	if packNames(want)["security"] != good {
		t.Fatalf("bundle serves %v, want security@%d", packNames(want), good)
	}

	for _, loss := range []struct {
		name string
		lose func(cm *corev1.ConfigMap) error
	}{
		{"deleted", func(cm *corev1.ConfigMap) error { return k8s.Delete(ctx, cm) }},
		{"overwritten with garbage", func(cm *corev1.ConfigMap) error {
			cm.Data, cm.BinaryData = map[string]string{bundle.KeyPlain: "{not a bundle"}, nil
			return k8s.Update(ctx, cm)
		}},
		{"overwritten with an empty bundle", func(cm *corev1.ConfigMap) error {
			empty := &bundle.Bundle{Capability: want.Capability}
			var err error
			if empty.Digest, err = empty.ComputeDigest(); err != nil {
				return err
			}
			enc, err := bundle.Encode(empty)
			if err != nil {
				return err
			}
			cm.Data, cm.BinaryData = enc.Data, enc.BinaryData
			return k8s.Update(ctx, cm)
		}},
	} {
		t.Run(loss.name, func(t *testing.T) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
				t.Fatal(err)
			}
			lost := cm.ResourceVersion
			if err := loss.lose(cm); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the bundle published again, security@"+fmt.Sprint(good)+" included", func() (bool, string) {
				got := &corev1.ConfigMap{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
					return false, err.Error()
				}
				if got.ResourceVersion == lost {
					return false, "not lost yet"
				}
				b, err := bundle.Decode(got.Data, got.BinaryData)
				if err != nil {
					return false, err.Error()
				}
				return b.Digest == want.Digest && got.Annotations[resource.DigestAnnotation] == want.Digest, describeBundle(b)
			})
		})
	}
	eventually(t, "a BundleRestored warning on the Capability", func() (bool, string) {
		var events eventsv1.EventList
		if err := k8s.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Reason == "BundleRestored" && e.Type == corev1.EventTypeWarning && e.Regarding.Name == c.Name
		}), fmt.Sprintf("%d events", len(events.Items))
	})
}

// TestDeletingAPackUpdatesTheBundle and the Capability's status.
func TestDeletingAPackUpdatesTheBundle(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	keep := pack(ns, "keep", c.Name, rulesJSON(t, rule("acme.security", "KEEP")))
	gone := pack(ns, "gone", c.Name, rulesJSON(t, rule("acme.security", "GONE")))
	create(t, keep)
	create(t, gone)
	waitBundle(t, ns, c.Name, "both packs", func(b *bundle.Bundle) bool { return len(b.Packs) == 2 })
	if err := k8s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, ns, c.Name, "only keep", func(b *bundle.Bundle) bool {
		n := packNames(b)
		return len(n) == 1 && n["keep"] > 0
	})
	eventually(t, "capability status listing only keep", func() (bool, string) {
		conditionsOf(t, c)
		return len(c.Status.Packs) == 1 && c.Status.Packs[0] == "keep", fmt.Sprint(c.Status.Packs)
	})
}

// TestPackHeldByAFinalizerSaysDeleting (found in review): a pack being deleted leaves the
// bundle at once, though a finalizer keeps the object; its status said Ready=True,
// published, naming the bundle, for as long as the finalizer held it.
func TestPackHeldByAFinalizerSaysDeleting(t *testing.T) {
	ns := namespace(t)
	c, p := publishedPack(t, ns)
	update(t, p, func() { p.Finalizers = []string{"example.com/hold"} })
	t.Cleanup(func() { update(t, p, func() { p.Finalizers = nil }) })
	if err := k8s.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, ns, c.Name, "the bundle without the pack", func(b *bundle.Bundle) bool { return len(b.Packs) == 0 })
	cond := waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonDeleting)
	if p.Status.PublishedGeneration != nil || p.Status.Bundle != nil || !strings.Contains(cond.Message, "being deleted") {
		t.Errorf("publishedGeneration %v, bundle %+v, message %q: want nothing serving", p.Status.PublishedGeneration, p.Status.Bundle, cond.Message)
	}
}

// TestDeletingTheCapabilityRemovesItsBundle: the ConfigMap goes with the Capability and
// the packs say the Capability is missing.
func TestDeletingTheCapabilityRemovesItsBundle(t *testing.T) {
	ns := namespace(t)
	c, p := publishedPack(t, ns)
	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the bundle ConfigMap to be deleted", func() (bool, string) {
		b, _ := published(t, ns, c.Name)
		return b == nil, "still there"
	})
	cond := waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityMissing)
	// The first status written after the deletion already says nothing serves.
	if p.Status.PublishedGeneration != nil || p.Status.Bundle != nil || !strings.Contains(cond.Message, "nothing of it is published") {
		t.Errorf("publishedGeneration %v, bundle %+v, message %q after the bundle was deleted", p.Status.PublishedGeneration, p.Status.Bundle, cond.Message)
	}
}

// TestPackBeforeItsCapability: a pack naming a Capability that does not exist yet waits,
// and is published once the Capability arrives (GitOps applies in any order).
func TestPackBeforeItsCapability(t *testing.T) {
	ns := namespace(t)
	p := pack(ns, "early", "acme-gateway", rulesJSON(t, rule("acme.security", "SHELL")))
	create(t, p)
	waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityMissing)
	create(t, sampleCapability(t, ns))
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

// randomText is incompressible printable text of n bytes.
func randomText(t *testing.T, n int) string {
	raw := make([]byte, n*3/4+3)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// bigPack is a pack of rules whose copy text makes it about size bytes, compressible
// or not.
func bigPack(t *testing.T, ns, name, capability, prefix string, size int, compressible bool) *rulesv1alpha1.RulePack {
	const perRule = 60 << 10
	var rules []map[string]any
	for i := 0; i*perRule < size; i++ {
		text := strings.Repeat("Explain the refusal to the agent in plain words. ", perRule/50)
		if !compressible {
			text = randomText(t, perRule)
		}
		rules = append(rules, rule("acme.big", fmt.Sprintf("%s_%03d", prefix, i), "copy", map[string]any{"why": text}))
	}
	return pack(ns, name, capability, rulesJSON(t, rules...))
}

// TestLargeBundles: a bundle over the plain limit is published compressed; a pack that
// cannot fit is held back, the previous bundle stays, and status says why.
func TestLargeBundles(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	for i := range 3 {
		create(t, bigPack(t, ns, fmt.Sprintf("prose-%d", i), c.Name, fmt.Sprintf("PROSE%d", i), 400<<10, true))
	}
	_, cm := waitBundle(t, ns, c.Name, "three prose packs", func(b *bundle.Bundle) bool { return len(b.Packs) == 3 })
	if len(cm.Data) != 0 || len(cm.BinaryData[bundle.KeyGzip]) == 0 {
		t.Fatalf("a 1.2 MB bundle should be published gzip-compressed in binaryData; data keys %d, binaryData keys %d", len(cm.Data), len(cm.BinaryData))
	}
	noise1 := bigPack(t, ns, "noise-1", c.Name, "NOISE1", 700<<10, false)
	create(t, noise1)
	b, _ := waitBundle(t, ns, c.Name, "the first noise pack", func(b *bundle.Bundle) bool { return len(b.Packs) == 4 })
	noise2 := bigPack(t, ns, "noise-2", c.Name, "NOISE2", 700<<10, false)
	create(t, noise2)
	cond := waitReady(t, noise2, metav1.ConditionFalse, rulesv1alpha1.ReasonBundleTooLarge)
	t.Logf("held back: %s", cond.Message)
	waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonBundleTooLarge)
	after, _ := published(t, ns, c.Name)
	if after.Digest != b.Digest {
		t.Errorf("the bundle changed (%s -> %s) although the new pack was held back", b.Digest, after.Digest)
	}
	if err := k8s.Delete(ctx, noise1); err != nil {
		t.Fatal(err)
	}
	waitReady(t, noise2, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

// TestRestartWritesNothing: a new manager over an unchanged cluster reconciles every
// Capability and writes no ConfigMap and no status.
func TestRestartWritesNothing(t *testing.T) {
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	p := pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "SHELL")))
	bad := pack(ns, "bad", c.Name, rulesJSON(t, rule("acme.security", "BAD", "when", "nope")))
	cfg := operatorConfig(t, ns, "rollout", c.Name, 0, map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.security/SHELL": "monitor"}})
	create(t, p)
	create(t, bad)
	create(t, cfg)
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, bad, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	// Settled: the Capability's status names the bundle the ConfigMap holds.
	eventually(t, "the capability status to name the published bundle", func() (bool, string) {
		_, cm := published(t, ns, c.Name)
		conditionsOf(t, c)
		return cm != nil && c.Status.Bundle != nil && c.Status.Bundle.Digest == cm.Annotations[resource.DigestAnnotation] && len(c.Status.Packs) == 1,
			fmt.Sprintf("%+v", c.Status.Bundle)
	})

	stopManager()
	versions := resourceVersions(t, ns)
	var caps rulesv1alpha1.CapabilityList
	if err := k8s.List(ctx, &caps); err != nil {
		t.Fatal(err)
	}
	before := reconcileCount(t)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new manager to reconcile every Capability", func() (bool, string) {
		n := reconcileCount(t) - before
		return n >= float64(len(caps.Items)), fmt.Sprintf("%v of %d", n, len(caps.Items))
	})
	if after := resourceVersions(t, ns); fmt.Sprint(after) != fmt.Sprint(versions) {
		t.Errorf("restart wrote objects:\nbefore %v\nafter  %v", versions, after)
	}
}

// resourceVersions lists every object a reconcile could write in ns.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lists := []client.ObjectList{&rulesv1alpha1.CapabilityList{}, &rulesv1alpha1.RulePackList{}, &rulesv1alpha1.OperatorConfigList{}, &corev1.ConfigMapList{}}
	for _, l := range lists {
		if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := metaItems(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			out[fmt.Sprintf("%T/%s", l, o.GetName())] = o.GetResourceVersion()
		}
	}
	return out
}

func metaItems(l client.ObjectList) ([]metav1.Object, error) {
	var out []metav1.Object
	switch v := l.(type) {
	case *rulesv1alpha1.CapabilityList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *rulesv1alpha1.RulePackList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *rulesv1alpha1.OperatorConfigList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list %T", l)
	}
	return out, nil
}

// TestScale200Packs measures, on the real API server, the time from creating 200 packs
// of 10 rules to the bundle holding all of them, and from one pack update to the bundle
// carrying it. The figures are logged, not asserted: performance is measured.
func TestScale200Packs(t *testing.T) {
	if testing.Short() {
		t.Skip("scale run")
	}
	ns := namespace(t)
	c := sampleCapability(t, ns)
	create(t, c)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	packs := make([]*rulesv1alpha1.RulePack, 200)
	for i := range packs {
		rules := make([]map[string]any, 10)
		for j := range rules {
			rules[j] = rule(fmt.Sprintf("scale.p%03d", i), fmt.Sprintf("RULE_%02d", j),
				"selector", map[string]any{"tool": []any{"read", "write"}},
				"when", fmt.Sprintf(`tool_arg_int("size") > %d && starts_with(tool_arg_string("path"), "/etc")`, j),
				"copy", map[string]any{"what": "{{ tool }} touched a protected path"})
		}
		packs[i] = pack(ns, fmt.Sprintf("pack-%03d", i), c.Name, rulesJSON(t, rules...))
	}
	// Created from 16 clients at once, as a GitOps sync would apply them.
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(16)
	for _, p := range packs {
		g.Go(func() error { return k8s.Create(ctx, p) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	waitBundle(t, ns, c.Name, "all 200 packs", func(b *bundle.Bundle) bool { return len(b.Packs) == 200 })
	all := time.Since(start)
	t.Logf("200 packs x 10 rules: created in %v, bundle with all of them published %v after the first create (%v after the last)",
		created.Round(time.Millisecond), all.Round(time.Millisecond), (all - created).Round(time.Millisecond))

	// Steady state: every status written, nothing queued.
	eventually(t, "every pack's status", func() (bool, string) {
		var list rulesv1alpha1.RulePackList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, p := range list.Items {
			if c := meta.FindStatusCondition(p.Status.Conditions, rulesv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
				ready++
			}
		}
		return ready == len(packs), fmt.Sprintf("%d of %d ready", ready, len(packs))
	})
	t.Logf("every status written %v after the first create", time.Since(start).Round(time.Millisecond))

	_, cm := published(t, ns, c.Name)
	before := cm.Annotations[resource.DigestAnnotation]
	target := packs[100]
	start = time.Now()
	update(t, target, func() { target.Spec.Rules = rulesJSON(t, rule("scale.p100", "REPLACED")) })
	// Poll the digest annotation alone (metadata only, not the megabyte of data), then
	// check the new bundle once.
	head := &metav1.PartialObjectMetadata{}
	head.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	eventually(t, "a new bundle digest", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), head); err != nil {
			t.Fatal(err)
		}
		return head.GetAnnotations()[resource.DigestAnnotation] != before, before
	})
	elapsed := time.Since(start)
	if b, _ := published(t, ns, c.Name); packNames(b)[target.Name] != target.Generation {
		t.Fatalf("the new bundle serves %s@%d, want generation %d", target.Name, packNames(b)[target.Name], target.Generation)
	}
	t.Logf("one pack update reached the bundle in %v", elapsed.Round(time.Millisecond))
}

// TestForeignConfigMapIsLeftAlone: a ConfigMap the operator did not write that has the
// bundle's name is never overwritten; the Capability says why nothing is published, and
// removing that ConfigMap publishes the bundle. The manager's cache does not hold that
// ConfigMap (it has no bundle labels): the controller reads it past the cache, and its
// removal is seen at the next recheck (foreignRecheck), not by a watch.
func TestForeignConfigMapIsLeftAlone(t *testing.T) {
	t.Parallel() // it waits out foreignRecheck, beside the other test that does
	ns := namespace(t)
	c := sampleCapability(t, ns)
	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: resource.BundleName(c.Name)},
		Data:       map[string]string{"owner": "someone else"},
	}
	create(t, foreign)
	create(t, c)
	cond := waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonBundleNameTaken)
	if !strings.Contains(cond.Message, foreign.Name) {
		t.Errorf("Ready message %q does not name ConfigMap %s", cond.Message, foreign.Name)
	}
	got := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 1 || got.Data["owner"] != "someone else" || len(got.OwnerReferences) != 0 {
		t.Fatalf("the foreign ConfigMap was changed: data %v, owners %v", got.Data, got.OwnerReferences)
	}
	if err := k8s.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

// TestPackOfAMissingCapabilityWithAForeignConfigMapSaysCapabilityMissing: a ConfigMap
// the operator did not write holds the bundle name of a Capability that does not exist;
// the pack naming that Capability still says why it is not published.
func TestPackOfAMissingCapabilityWithAForeignConfigMapSaysCapabilityMissing(t *testing.T) {
	ns := namespace(t)
	create(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: resource.BundleName("acme-gateway")},
		Data:       map[string]string{"owner": "someone else"},
	})
	p := pack(ns, "early", "acme-gateway", rulesJSON(t, rule("acme.security", "SHELL")))
	create(t, p)
	waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityMissing)
}

// TestRecreatedPackDoesNotInheritThePublishedGeneration: a pack deleted and created
// again under its name while no reconcile ran (here: while no manager ran) is a
// newcomer. Its generation that does not load is left out; the deleted object's
// published generation does not keep serving under its name.
func TestRecreatedPackDoesNotInheritThePublishedGeneration(t *testing.T) {
	ns := namespace(t)
	c, p := publishedPack(t, ns)
	update(t, p, func() { p.Spec.Rules = rulesJSON(t, rule("acme.security", "SHELL", "effect", "block")) })
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitBundle(t, ns, c.Name, "the edit published", func(b *bundle.Bundle) bool { return packNames(b)["security"] == 2 })

	stopManager()
	if err := k8s.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pack gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(p), &rulesv1alpha1.RulePack{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	again := pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "SHELL", "when", "nope")))
	create(t, again)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	cond := waitReady(t, again, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	if again.Status.PublishedGeneration != nil || !strings.Contains(cond.Message, "nothing of it is published") {
		t.Errorf("the new pack claims publishedGeneration %v: %s", again.Status.PublishedGeneration, cond.Message)
	}
	waitBundle(t, ns, c.Name, "the deleted pack's rules gone", func(b *bundle.Bundle) bool { return len(b.Packs) == 0 })
}

// TestTakenOverConfigMapClearsWhatWasPublished: a bundle ConfigMap taken over by
// someone else (its owner reference and labels removed) is left alone, and nothing
// claims to be published in it any more: the Capability and its pack name no bundle,
// the pack no published generation, and the metrics drop the bundle. Giving it back
// (deleting it) publishes again.
func TestTakenOverConfigMapClearsWhatWasPublished(t *testing.T) {
	t.Parallel() // it waits out foreignRecheck, beside the other test that does
	ns := namespace(t)
	c, p := publishedPack(t, ns)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	_, cm := published(t, ns, c.Name)
	cm.OwnerReferences, cm.Labels = nil, nil
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonBundleNameTaken)
	if st := c.Status; st.Bundle != nil || len(st.Packs) != 0 || st.RuleCount != 0 {
		t.Errorf("the Capability still names what the taken ConfigMap holds: bundle %+v, packs %v, rules %d", st.Bundle, st.Packs, st.RuleCount)
	}
	waitReady(t, p, metav1.ConditionFalse, rulesv1alpha1.ReasonBundleNameTaken)
	if p.Status.Bundle != nil || p.Status.PublishedGeneration != nil {
		t.Errorf("the pack still claims bundle %+v, generation %v", p.Status.Bundle, p.Status.PublishedGeneration)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewStateCollector(k8s))
	for name := range series(t, reg, ns) {
		if strings.HasPrefix(name, "oar_operator_bundle_info{") || strings.HasPrefix(name, "oar_operator_bundle_rules{") {
			t.Errorf("metric %s still reported for a bundle that is not published", name)
		}
	}
	if err := k8s.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, p, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

// TestBundleWhoseLabelsWereRemovedIsHealed: a bundle ConfigMap the Capability still
// controls but whose labels were removed (a careless kubectl edit, a label-pruning
// tool) is recognised as the Capability's own and its labels are restored; the
// Capability stays Ready.
func TestBundleWhoseLabelsWereRemovedIsHealed(t *testing.T) {
	ns := namespace(t)
	c, _ := publishedPack(t, ns)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	_, cm := published(t, ns, c.Name)
	cm.Labels = nil
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the bundle's labels restored", func() (bool, string) {
		_, cm := published(t, ns, c.Name)
		return ownedBy(cm, c.Name), fmt.Sprintf("labels %v", cm.Labels)
	})
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}
