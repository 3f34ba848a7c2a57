package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestMovingAPublishedPackWarnsOfWhatItsOldBundleLeavesOut: a published pack moved to
// another Capability (spec.capabilityRef.name edited) takes its rules out of its old
// Capability's bundle, where the controller can no longer hold the change back: a
// published pack overriding one of its rules ([OAR-EVAL-13]) and a published
// configuration naming it ([OAR-CFG-4]) are left out there. The move is admitted —
// the pack is valid where it goes — with a warning naming each.
func TestMovingAPublishedPackWarnsOfWhatItsOldBundleLeavesOut(t *testing.T) {
	ctx := context.Background()
	base := pack(t, "base", rule("acme.base", "A"))
	user := pack(t, "user", with(rule("acme.user", "U"), "overrides", []any{"acme.base/A"}))
	quiet := map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/A"}}
	cl := clusterOf(t, []*rulesv1alpha1.RulePack{base, user}, nil, bundle.Config{Name: "quiet", Generation: 1, Document: quiet})
	cl.capabilities = append(cl.capabilities, capabilityObject("ns", "other", gatewaySpec()))

	// What the controller does with gateway's bundle once base is bound elsewhere.
	current := cl.bundles[types.NamespacedName{Namespace: "ns", Name: "gateway"}]
	userRules, errs := resource.PackRules(user)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	res, err := bundle.Assemble(bundle.Input{Capability: current.Capability, Current: current,
		Packs:   []bundle.PackInput{{Name: "user", Generation: 1, CreationTime: time.Unix(1, 0), Rules: userRules}},
		Configs: []bundle.ConfigInput{{Name: "quiet", Generation: 1, Document: quiet}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Packs["user"].Published || res.Configs["quiet"].Published {
		t.Fatalf("the controller keeps user or quiet without base: %+v %+v", res.Packs["user"], res.Configs["quiet"])
	}

	moved := base.DeepCopy()
	moved.Spec.CapabilityRef.Name = "other"
	ws, admitted := verdict(t, func() (admission.Warnings, error) {
		return (&RulePackValidator{Cluster: cl}).ValidateUpdate(ctx, base, moved)
	})
	if !admitted {
		t.Fatalf("the move is refused: %q", ws)
	}
	hasWarning(t, ws, "[OAR-EVAL-13]", `RulePack "user" spec.rules[0].overrides[0]`, `to Capability "other"`, `Capability "gateway"'s bundle`, "leaves that pack out")
	hasWarning(t, ws, "[OAR-CFG-4]", `OperatorConfig "quiet" spec.config.disable[0]`, `to Capability "other"`, "leaves that published configuration out")

	// A pack nothing depends on moves without a warning about its old Capability.
	lone := pack(t, "lone", rule("acme.lone", "L"))
	cl = clusterOf(t, []*rulesv1alpha1.RulePack{lone, pack(t, "keep", rule("acme.keep", "K"))}, nil, bundle.Config{Name: "quiet", Generation: 1, Document: map[string]any{"oar_config": "1.0", "disable": []any{"acme.keep/K"}}})
	cl.capabilities = append(cl.capabilities, capabilityObject("ns", "other", gatewaySpec()))
	movedLone := lone.DeepCopy()
	movedLone.Spec.CapabilityRef.Name = "other"
	ws, admitted = verdict(t, func() (admission.Warnings, error) {
		return (&RulePackValidator{Cluster: cl}).ValidateUpdate(ctx, lone, movedLone)
	})
	if !admitted || strings.Contains(strings.Join(ws, "\n"), "gateway") {
		t.Errorf("moving a pack nothing depends on: admitted %v, warnings %q", admitted, ws)
	}
}
