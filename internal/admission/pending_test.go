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

// TestConfigurationThatAPendingPackBreaksIsWarned: a configuration that applies to the
// published rules, but not once a pack bound to the Capability and not published yet
// is — it disables that pack's mandatory rule ([OAR-CFG-5]), or its bare id becomes
// ambiguous with that pack's rule ([OAR-CFG-8]) — is admitted with a warning naming
// clause, field, rule and pack: the controller refuses the configuration when it
// publishes the pack first.
func TestConfigurationThatAPendingPackBreaksIsWarned(t *testing.T) {
	ctx := context.Background()
	base := pack(t, "base", rule("acme.base", "READ"))
	strict := pack(t, "strict", with(rule("acme.strict", "GUARD"), "mandatory", true), rule("acme.strict", "READ"))
	cl := clusterOf(t, []*rulesv1alpha1.RulePack{base}, []*rulesv1alpha1.RulePack{strict})
	v := &OperatorConfigValidator{Cluster: cl}

	for _, c := range []struct {
		name   string
		doc    map[string]any
		clause string
		field  string
		rule   string
	}{
		{"a mandatory rule of the pending pack disabled", map[string]any{"oar_config": "1.0", "disable": []any{"acme.strict/GUARD"}},
			"[OAR-CFG-5]", "spec.config.disable[0]", "acme.strict/GUARD"},
		{"a bare id made ambiguous by the pending pack", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"READ": "monitor"}},
			"[OAR-CFG-8]", "spec.config.enforcement.READ", "acme.strict/READ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// What the controller does with the configuration once strict is published.
			current := cl.bundles[types.NamespacedName{Namespace: "ns", Name: "gateway"}]
			var packs []bundle.PackInput
			for i, p := range []*rulesv1alpha1.RulePack{base, strict} {
				rules, errs := resource.PackRules(p)
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				packs = append(packs, bundle.PackInput{Name: p.Name, Generation: 1, CreationTime: time.Unix(int64(i), 0), Rules: rules})
			}
			res, err := bundle.Assemble(bundle.Input{Capability: current.Capability, Current: current, Packs: packs,
				Configs: []bundle.ConfigInput{{Name: "tuning", Generation: 1, Document: c.doc}}})
			if err != nil {
				t.Fatal(err)
			}
			if o := res.Configs["tuning"]; o.Published || !strings.Contains(o.Message+o.Errors.Error(), c.clause) {
				t.Fatalf("the controller applies the configuration with strict published: %+v", o)
			}

			ws, admitted := verdict(t, func() (admission.Warnings, error) {
				return v.ValidateCreate(ctx, operatorConfig(t, "ns", "tuning", "gateway", c.doc))
			})
			if !admitted {
				t.Fatalf("refused, though it applies to the published rules: %q", ws)
			}
			hasWarning(t, ws, c.clause, c.field, c.rule, `RulePack "strict"`, "not published yet")
			if all := strings.Join(ws, "\n"); strings.Contains(all, "applies this configuration once") {
				t.Errorf("a warning promises the configuration applies once strict is published: %q", ws)
			}
		})
	}
}
