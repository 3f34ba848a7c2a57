package admission

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestCapabilityUpdateIgnoresPublishedPacksThatAreGone: a Capability update is refused
// when it would make what is published stop loading — but a published pack whose object
// was deleted, or created anew under its name (another UID), is not published again
// whatever the document, so the controller accepts a document only it would not load
// under, and so does the webhook. Nor does a configuration that only that pack let apply.
func TestCapabilityUpdateIgnoresPublishedPacksThatAreGone(t *testing.T) {
	ctx := context.Background()
	reads := pack(t, "reads", rule("acme.reads", "OUTSIDE"))
	reads.UID = "reads-1"
	keep := pack(t, "keep", with(rule("acme.keep", "K"), "requires", map[string]any{"profiles": []any{"tool"}}, "when", nil, "copy", map[string]any{"what": "Tool {{ tool }}."}))
	keep.UID = "keep-1"
	narrowed := capabilityObject("ns", "gateway", gatewaySpec())
	narrowed.Spec.Profiles = slices.DeleteFunc(slices.Clone(narrowed.Spec.Profiles), func(p string) bool { return p == "filesystem" })
	key := types.NamespacedName{Namespace: "ns", Name: "gateway"}
	quiet := bundle.Config{Name: "quiet", Generation: 1, Document: map[string]any{"oar_config": "1.0", "disable": []any{"acme.reads/OUTSIDE"}}}

	cluster := func(live ...rulesv1alpha1.RulePack) *memoryCluster {
		cl := clusterOf(t, []*rulesv1alpha1.RulePack{reads, keep}, nil, quiet)
		cl.packs = live
		cl.uids = map[types.NamespacedName]*resource.PublishedUIDs{key: {Packs: map[string]types.UID{"reads": "reads-1", "keep": "keep-1"}}}
		return cl
	}
	update := func(cl *memoryCluster) ([]string, bool) {
		return verdict(t, func() (admission.Warnings, error) {
			return (&CapabilityValidator{Cluster: cl}).ValidateUpdate(ctx, cl.capabilities[0], narrowed)
		})
	}

	if ws, admitted := update(cluster(*reads, *keep)); admitted {
		t.Fatalf("the narrowing is admitted while reads is there: %q", ws)
	}
	if ws, admitted := update(cluster(*keep)); !admitted {
		t.Errorf("reads was deleted, yet the narrowing is refused for it: %q", ws)
	}
	renewed := pack(t, "reads", with(rule("acme.reads", "OUTSIDE"), "requires", map[string]any{"profiles": []any{"tool"}}, "when", nil, "copy", map[string]any{"what": "Tool {{ tool }}."}))
	renewed.UID = "reads-2"
	if ws, admitted := update(cluster(*renewed, *keep)); !admitted {
		t.Errorf("reads was created anew, yet the narrowing is refused for its published generation: %q", strings.Join(ws, "; "))
	}
}
