package admission

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// TestAPackDroppingARuleAConfigurationNamesByBareIDIsWarnedOf: a published
// configuration names a rule by its bare id; an update of the pack that drops the rule
// would leave the configuration naming no loaded rule ([OAR-CFG-4]), which the
// controller answers by holding the update back, and the webhook says so.
func TestAPackDroppingARuleAConfigurationNamesByBareIDIsWarnedOf(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	base := publishedWithQuiet(t, namespace(t), "A")
	edited := base.DeepCopy()
	edited.Spec.Rules = rawRules(t, []map[string]any{rule("acme.base", "K")})
	v := &RulePackValidator{Cluster: &ClientCluster{Reader: k8s}}
	warnings, _ := verdict(t, func() (admission.Warnings, error) { return v.ValidateUpdate(ctx, base, edited) })
	hasWarning(t, warnings, "[OAR-CFG-4]", `OperatorConfig "quiet" spec.config.disable[0]`, "hold this update back")
}

// publishedWithQuiet publishes, under Capability "gateway" in ns, RulePack "base" with
// rules acme.base/A and acme.base/K and OperatorConfig "quiet" disabling the rule named
// disabled, and returns base as the API server holds it.
func publishedWithQuiet(t *testing.T, ns, disabled string) *rulesv1alpha1.RulePack {
	t.Helper()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	base := rulePack(t, ns, "base", "gateway", 0, []map[string]any{rule("acme.base", "A"), rule("acme.base", "K")})
	mustCreate(t, base)
	mustCreate(t, operatorConfig(t, ns, "quiet", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{disabled}}))
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base}, "quiet")
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(base), base); err != nil {
		t.Fatal(err)
	}
	return base
}
