package admission

import (
	"context"
	"strings"
	"testing"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestRulePackLoadWarningsAreAdmissionWarnings: a rule whose selector clause is the
// empty list loads but is never selected, and the engine warns ([OAR-SEL-6]); the
// controller puts that warning in status.warnings, so the webhook gives it too, naming
// clause, rule and field — also when the load comes from the cache of loads.
func TestRulePackLoadWarningsAreAdmissionWarnings(t *testing.T) {
	loads.forget()
	t.Cleanup(loads.forget)
	capObj := capabilityObject("ns", "gw", gatewaySpec())
	cl := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capObj}}
	p := rulePack(t, "ns", "p", "gw", 1, []map[string]any{
		rule("acme.sec", "READ"),
		with(rule("acme.sec", "NEVER"), "selector", map[string]any{"tool": []any{}}),
	})

	doc, err := resource.CapabilityDocument(capObj)
	if err != nil {
		t.Fatal(err)
	}
	c, errs := engine.LoadCapability(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rules, errs := resource.PackRules(p)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rs, errs := engine.LoadRules(c, rules)
	if len(errs) > 0 || len(rs.Warnings) != 1 || rs.Warnings[0].Clause != "OAR-SEL-6" {
		t.Fatalf("the engine loads the pack with one [OAR-SEL-6] warning: %v %v", rs.Warnings, errs)
	}

	const want = "[OAR-SEL-6] spec.rules[1].selector.tool: "
	for _, round := range []string{"loaded", "from the cache of loads"} {
		ws, err := (&RulePackValidator{Cluster: cl}).ValidateCreate(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: refused: %v", round, err)
		}
		var found []string
		for _, w := range ws {
			if strings.HasPrefix(w, want) {
				found = append(found, w)
			}
		}
		if len(found) != 1 || !strings.Contains(found[0], "(rule acme.sec/NEVER)") {
			t.Errorf("%s: want one warning %q… naming rule acme.sec/NEVER, got %q", round, want, ws)
		}
	}
}
