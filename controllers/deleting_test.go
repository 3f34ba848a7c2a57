package controllers

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
)

// TestDeletingResourcesStillServedWhileHeldSaySo (found in review): a pack and a
// configuration deleted (held by a finalizer) while the Capability is held back
// (narrowed without the webhook) are still in the bundle that serves, yet said nothing
// of them was published. They say which generation still serves, in which bundle, until
// the hold clears; then that nothing of them is.
func TestDeletingResourcesStillServedWhileHeldSaySo(t *testing.T) {
	ns := namespace(t)
	c, _ := publishedPack(t, ns)
	gone := pack(ns, "gone", c.Name, rulesJSON(t, rule("acme.gone", "G")))
	gone.Finalizers = []string{"example.com/hold"}
	create(t, gone)
	t.Cleanup(func() { update(t, gone, func() { gone.Finalizers = nil }) })
	cfg := operatorConfig(t, ns, "rollout", c.Name, 0, map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.security/SHELL": "monitor"}})
	cfg.Finalizers = []string{"example.com/hold"}
	create(t, cfg)
	t.Cleanup(func() { update(t, cfg, func() { cfg.Finalizers = nil }) })
	waitReady(t, gone, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	profiles := c.Spec.Profiles

	update(t, c, func() { c.Spec.Profiles = []string{"filesystem", "content"} })
	waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed)
	held, cm := published(t, ns, c.Name)
	for _, obj := range []client.Object{gone, cfg} {
		if err := k8s.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cond := waitReady(t, gone, metav1.ConditionFalse, rulesv1alpha1.ReasonDeleting)
	if g := gone.Status.PublishedGeneration; g == nil || *g != packNames(held)["gone"] || gone.Status.Bundle == nil ||
		gone.Status.Bundle.Digest != held.Digest || gone.Status.Bundle.ConfigMapName != cm.Name ||
		!strings.Contains(cond.Message, "once the hold clears") || !strings.Contains(cond.Message, "still serves") {
		t.Errorf("pack gone: publishedGeneration %v, bundle %+v, message %q; want generation %d still serving in bundle %s",
			g, gone.Status.Bundle, cond.Message, packNames(held)["gone"], held.Digest)
	}
	cond = waitReady(t, cfg, metav1.ConditionFalse, rulesv1alpha1.ReasonDeleting)
	if g := cfg.Status.PublishedGeneration; g == nil || *g != held.Configs[0].Generation || !strings.Contains(cond.Message, "still serves") {
		t.Errorf("configuration rollout: publishedGeneration %v, message %q; want generation %d still serving", g, cond.Message, held.Configs[0].Generation)
	}
	if after, _ := published(t, ns, c.Name); after.Digest != held.Digest {
		t.Fatalf("the held bundle changed: %s", describeBundle(after))
	}

	update(t, c, func() { c.Spec.Profiles = profiles })
	waitBundle(t, ns, c.Name, "the bundle without what is deleted", func(b *bundle.Bundle) bool { return len(b.Packs) == 1 && len(b.Configs) == 0 })
	eventually(t, "pack gone and configuration rollout to say nothing of them serves", func() (bool, string) {
		conditionsOf(t, gone)
		conditionsOf(t, cfg)
		return gone.Status.PublishedGeneration == nil && gone.Status.Bundle == nil && cfg.Status.PublishedGeneration == nil,
			fmt.Sprintf("gone %v %+v, rollout %v", gone.Status.PublishedGeneration, gone.Status.Bundle, cfg.Status.PublishedGeneration)
	})
	for _, ready := range []*metav1.Condition{meta.FindStatusCondition(gone.Status.Conditions, rulesv1alpha1.ConditionReady),
		meta.FindStatusCondition(cfg.Status.Conditions, rulesv1alpha1.ConditionReady)} {
		if ready.Reason != rulesv1alpha1.ReasonDeleting || !strings.Contains(ready.Message, "nothing of it is published") {
			t.Errorf("Ready %s/%s: %s; want Deleting, nothing published", ready.Status, ready.Reason, ready.Message)
		}
	}
}
