package admission

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// laggingCluster is a refresher whose cache has not seen the packs created a moment
// ago; Fresh reads the API server, which has.
type laggingCluster struct {
	*memoryCluster
	fresh *memoryCluster
}

func (l *laggingCluster) Fresh() Cluster { return l.fresh }

// TestRulePackReferencingAPackTheCacheHasNotSeen: pack a is created, then pack b whose
// rule overrides a's, in one sync. The webhook's cache has not seen a yet; the controller
// reads it and resolves the reference, so the webhook asks the API server before
// refusing b ([OAR-EVAL-13]), as the OperatorConfig webhook does for [OAR-CFG-4].
func TestRulePackReferencingAPackTheCacheHasNotSeen(t *testing.T) {
	ctx := context.Background()
	capObj := capabilityObject("ns", "gw", gatewaySpec())
	a := rulePack(t, "ns", "a", "gw", 1, []map[string]any{rule("acme.a", "BASE")})
	b := rulePack(t, "ns", "b", "gw", 1, []map[string]any{with(rule("acme.b", "OVER"), "overrides", []any{"acme.a/BASE"})})
	stale := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capObj}}
	fresh := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capObj}, packs: []rulesv1alpha1.RulePack{*a}}

	if _, err := (&RulePackValidator{Cluster: stale}).ValidateCreate(ctx, b); err == nil || !strings.Contains(err.Error(), "OAR-EVAL-13") {
		t.Fatalf("with only the stale cache, b is refused for [OAR-EVAL-13]: %v", err)
	}
	if _, err := (&RulePackValidator{Cluster: &laggingCluster{stale, fresh}}).ValidateCreate(ctx, b); err != nil {
		t.Errorf("b refused on a stale cache although the API server holds a: %v", err)
	}
	// What is refused on the fresh read too stays refused.
	orphan := rulePack(t, "ns", "c", "gw", 1, []map[string]any{with(rule("acme.c", "OVER"), "overrides", []any{"acme.none/X"})})
	if _, err := (&RulePackValidator{Cluster: &laggingCluster{stale, fresh}}).ValidateCreate(ctx, orphan); err == nil || !strings.Contains(err.Error(), "OAR-EVAL-13") {
		t.Errorf("an override no pack defines, even fresh, is refused for [OAR-EVAL-13]: %v", err)
	}
}

// TestRulePackReferencingAPackTheCacheHasNotSeenEnvtest is the same through the
// ClientCluster the webhook runs with: its APIReader is asked once the cache refuses.
func TestRulePackReferencingAPackTheCacheHasNotSeenEnvtest(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	gateway := capabilityObject(ns, "gateway", gatewaySpec())
	mustCreate(t, gateway)
	base := rulePack(t, ns, "base", "gateway", 0, []map[string]any{rule("acme.base", "A")})
	mustCreate(t, base)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base})
	// a stands for a pack the controller has not published yet — here for good: it
	// duplicates a published rule (Conflict) — so that only the packs listed hold it.
	a := rulePack(t, ns, "a", "gateway", 0, []map[string]any{rule("acme.base", "A"), rule("acme.a", "BASE")})
	mustCreate(t, a)
	seen(t, gateway)
	seen(t, a)
	mgrMu.Lock()
	reader := cached
	mgrMu.Unlock()
	b := rulePack(t, ns, "b", "gateway", 0, []map[string]any{with(rule("acme.b", "OVER"), "overrides", []any{"acme.a/BASE"})})
	lagging := laggingCache{Reader: reader, hidden: map[string]bool{"a": true}}

	if _, err := (&RulePackValidator{Cluster: &ClientCluster{Reader: lagging}}).ValidateCreate(ctx, b); err == nil {
		t.Fatal("admitted with only the lagging cache: the test shows nothing")
	}
	if _, err := (&RulePackValidator{Cluster: &ClientCluster{Reader: lagging, APIReader: k8s}}).ValidateCreate(ctx, b); err != nil {
		t.Errorf("refused while the cache lags, although the API server holds pack a: %v", err)
	}
}

// TestPublishedPackTheCacheHasNotSeen: the bundle may be read past the cache
// (ClientCluster.APIReader) on a replica whose RulePack and OperatorConfig informers lag
// behind it. A published pack or configuration the cache does not list yet is not taken
// for one deleted, which is no incumbent: the webhook asks the API server first, so a
// pack duplicating the published pack's rule is warned about ([OAR-DOC-9]), and so is an
// update the published configuration holds back ([OAR-CFG-4]).
func TestPublishedPackTheCacheHasNotSeen(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	base := publishedWithQuiet(t, ns, "acme.base/A")
	mgrMu.Lock()
	reader := cached
	mgrMu.Unlock()
	lagging := laggingCache{Reader: reader, hidden: map[string]bool{"base": true, "quiet": true}}
	twin := rulePack(t, ns, "twin", "gateway", 0, []map[string]any{rule("acme.base", "K")})
	edited := base.DeepCopy()
	edited.Spec.Rules = rawRules(t, []map[string]any{rule("acme.base", "K")})
	judge := func(cl Cluster) (twinWarnings, updateWarnings []string) {
		v := &RulePackValidator{Cluster: cl}
		twinWarnings, _ = verdict(t, func() (admission.Warnings, error) { return v.ValidateCreate(ctx, twin) })
		updateWarnings, _ = verdict(t, func() (admission.Warnings, error) { return v.ValidateUpdate(ctx, base, edited) })
		return twinWarnings, updateWarnings
	}

	if twinWarnings, updateWarnings := judge(&ClientCluster{Reader: lagging}); len(twinWarnings)+len(updateWarnings) > 0 {
		t.Fatalf("warned with only the lagging cache (%q, %q): the test shows nothing", twinWarnings, updateWarnings)
	}
	twinWarnings, updateWarnings := judge(&ClientCluster{Reader: lagging, APIReader: k8s})
	hasWarning(t, twinWarnings, "[OAR-DOC-9]", "acme.base/K", `RulePack "base"`)
	hasWarning(t, updateWarnings, "[OAR-CFG-4]", `OperatorConfig "quiet" spec.config.disable[0]`, "hold this update back")
}
