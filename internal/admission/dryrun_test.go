package admission

import (
	"context"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// TestDryRun: kubectl apply --dry-run=server (and Argo CD or Flux server-side dry runs)
// gets the same verdict as the apply, and a dry run persists nothing.
func TestDryRun(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	broken := []map[string]any{with(rule("acme.security", "READ_OUTSIDE_SCOPE"), "when", "pth == 1")}
	dry := causes(t, k8s.Create(ctx, rulePack(t, ns, "broken", "gateway", 0, broken), client.DryRunAll))
	real := causes(t, k8s.Create(ctx, rulePack(t, ns, "broken", "gateway", 0, broken)))
	if !reflect.DeepEqual(dry, real) {
		t.Errorf("a dry run and the apply disagree:\n dry run: %v\n apply:   %v", dry, real)
	}
	valid := rulePack(t, ns, "valid", "gateway", 0, []map[string]any{rule("acme.security", "READ_OUTSIDE_SCOPE")})
	if err := k8s.Create(ctx, valid, client.DryRunAll); err != nil {
		t.Fatalf("a dry run of a valid pack was refused: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(valid), &rulesv1alpha1.RulePack{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry run persisted the pack: %v", err)
	}
}
