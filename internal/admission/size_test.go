package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// bulkyRules are n rules of namespace ns whose copy text is size random letters each,
// of letters, which gzip compresses by about as much as the alphabet is small.
func bulkyRules(ns string, n, size int, seed uint64, letters string) []map[string]any {
	rng := rand.New(rand.NewPCG(seed, seed))
	out := make([]map[string]any, n)
	for i := range out {
		b := make([]byte, size)
		for j := range b {
			b[j] = letters[rng.IntN(len(letters))]
		}
		out[i] = with(rule(ns, fmt.Sprintf("BULK_%d", i)), "copy", map[string]any{"what": string(b)})
	}
	return out
}

// incompressible is an alphabet of random text gzip hardly compresses.
const incompressible = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// TestRulePackTooLargeForABundleAloneIsRefused: a pack whose bundle, holding only it and
// its Capability, is over the ConfigMap limit can never be published (BundleTooLarge
// whatever else is published), so it is refused; the refusal says so and gives the sizes.
func TestRulePackTooLargeForABundleAloneIsRefused(t *testing.T) {
	cl := clusterOf(t, nil, nil)
	huge := rulePack(t, "ns", "huge", "gateway", 1, bulkyRules("acme.huge", 200, 8<<10, 1, incompressible))
	doc := cl.bundles[types.NamespacedName{Namespace: "ns", Name: "gateway"}].Capability
	rules, errs := resource.PackRules(huge)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := bundle.Encode(&bundle.Bundle{Capability: doc, Packs: []bundle.Pack{{Name: "huge", Generation: 1, Rules: rules}}}); err == nil {
		t.Fatal("the pack fits in a bundle alone: the test shows nothing")
	}
	ws, admitted := verdict(t, func() (admission.Warnings, error) {
		return (&RulePackValidator{Cluster: cl}).ValidateCreate(context.Background(), huge)
	})
	if admitted {
		t.Fatalf("a pack too large to publish even alone is admitted, warnings %q", ws)
	}
	_, err := (&RulePackValidator{Cluster: cl}).ValidateCreate(context.Background(), huge)
	if msg := err.Error(); !strings.Contains(msg, "spec.rules") || !strings.Contains(msg, "too large to publish even alone") || !strings.Contains(msg, "over the ConfigMap limit") {
		t.Errorf("the refusal does not say why: %s", msg)
	}
}

// TestRulePackTooLargeWithThePublishedPacksIsWarned: a pack near the limit that fits in
// a bundle alone (its rules compress well) but not with the packs published for its
// Capability is admitted — room may be made — with a warning that the controller holds
// it back (BundleTooLarge).
func TestRulePackTooLargeWithThePublishedPacksIsWarned(t *testing.T) {
	big := rulePack(t, "ns", "big", "gateway", 1, bulkyRules("acme.big", 120, 8<<10, 2, incompressible))
	cl := clusterOf(t, []*rulesv1alpha1.RulePack{big}, nil)
	more := rulePack(t, "ns", "more", "gateway", 1, bulkyRules("acme.more", 180, 8<<10, 3, "acgt"))
	current := cl.bundles[types.NamespacedName{Namespace: "ns", Name: "gateway"}]
	bigRules, _ := resource.PackRules(big)
	moreRules, _ := resource.PackRules(more)
	res, err := bundle.Assemble(bundle.Input{Capability: current.Capability, Current: current, Packs: []bundle.PackInput{
		{Name: "big", Generation: 1, CreationTime: time.Unix(1, 0), Rules: bigRules},
		{Name: "more", Generation: 1, CreationTime: time.Unix(2, 0), Rules: moreRules}}})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Packs["more"]; o.Published || o.Reason != bundle.ReasonBundleTooLarge {
		t.Fatalf("the controller does not hold more back for size: %+v", o)
	}
	ws, admitted := verdict(t, func() (admission.Warnings, error) {
		return (&RulePackValidator{Cluster: cl}).ValidateCreate(context.Background(), more)
	})
	if !admitted {
		t.Fatalf("a pack that fits alone is refused: %q", ws)
	}
	hasWarning(t, ws, "spec.rules: with the 1 pack and 0 configurations published", "over the ConfigMap limit", "holds this pack back (BundleTooLarge)")

	// Alone, the same pack is admitted without a word about size.
	ws, admitted = verdict(t, func() (admission.Warnings, error) {
		return (&RulePackValidator{Cluster: clusterOf(t, nil, nil)}).ValidateCreate(context.Background(), more)
	})
	if !admitted || strings.Contains(strings.Join(ws, "\n"), "ConfigMap limit") {
		t.Errorf("alone: admitted %v, warnings %q", admitted, ws)
	}
}
