package admission

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWebhookOutage stops the manager serving the webhooks: updates that leave spec
// unchanged (labels, finalizers, GitOps annotations) still succeed, since the
// configuration's matchConditions never send them to the webhook; a spec change fails
// (failurePolicy Fail).
func TestWebhookOutage(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	capability := capabilityObject(ns, "gateway", gatewaySpec())
	pack := rulePack(t, ns, "pack", "gateway", 0, []map[string]any{rule("acme.security", "READ_OUTSIDE_SCOPE")})
	config := operatorConfig(t, ns, "config", "gateway", map[string]any{"oar_config": "1.0"})
	objects := []client.Object{capability, pack, config}
	for _, o := range objects {
		mustCreate(t, o)
	}
	stopManager()
	t.Cleanup(func() {
		if err := startManager(); err != nil {
			t.Fatalf("restart the manager: %v", err)
		}
	})
	for _, o := range objects {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		o.SetLabels(map[string]string{"argocd.argoproj.io/instance": "rules"})
		o.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/checksum": "abc"})
		o.SetFinalizers([]string{"example.com/hold"})
		if err := k8s.Update(ctx, o); err != nil {
			t.Errorf("metadata update of %T %s failed with the webhook down: %v", o, o.GetName(), err)
		}
		o.SetFinalizers(nil)
		if err := k8s.Update(ctx, o); err != nil {
			t.Errorf("finalizer removal of %T %s failed with the webhook down: %v", o, o.GetName(), err)
		}
	}
	pack.Spec.Rules = rawRules(t, []map[string]any{rule("acme.security", "WRITE_OUTSIDE_SCOPE")})
	capability.Spec.Profiles = append(capability.Spec.Profiles, "mcp")
	for _, o := range []client.Object{pack, capability} {
		if err := k8s.Update(ctx, o); err == nil || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			t.Errorf("a spec change of %T %s with the webhook down: got %v, want the webhook call to fail", o, o.GetName(), err)
		}
	}
}
