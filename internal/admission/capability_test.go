package admission

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// TestCapabilityRefusals: an invalid capability document is refused, each problem at its
// member of spec with its clause.
func TestCapabilityRefusals(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	for _, c := range []struct {
		name          string
		edit          func(*rulesv1alpha1.CapabilitySpec)
		field, clause string
	}{
		{"a profile that is not standard", func(s *rulesv1alpha1.CapabilitySpec) { s.Profiles = append(s.Profiles, "telepathy") },
			"spec.profiles[4]", "OAR-FACT-24"},
		{"a detector profile without detectors", func(s *rulesv1alpha1.CapabilitySpec) { s.Profiles, s.Detectors = append(s.Profiles, "pii"), nil },
			"spec.profiles[4]", "OAR-OPS-22"},
		{"a core anchor declared nowhere", func(s *rulesv1alpha1.CapabilitySpec) { s.Anchors.Unsupported = s.Anchors.Unsupported[1:] },
			"spec.anchors", "OAR-PROF-2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := gatewaySpec()
			c.edit(&spec)
			err := k8s.Create(context.Background(), capabilityObject(ns, "invalid", spec))
			hasCause(t, causes(t, err), c.field, c.clause, "")
			t.Logf("kubectl: %v", err)
		})
	}
}

// TestCapabilityUpdateProtection: an update that would make a published pack stop
// loading is refused, naming the pack and the rule; one that keeps it loading, and a
// metadata-only change, are admitted.
func TestCapabilityUpdateProtection(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	capability := capabilityObject(ns, "gateway", gatewaySpec())
	mustCreate(t, capability)
	pack := rulePack(t, ns, "files", "gateway", 0, []map[string]any{rule("acme.security", "READ_OUTSIDE_SCOPE")})
	mustCreate(t, pack)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{pack})

	// The controller writes the status meanwhile: retry on a conflict.
	update := func(edit func(*rulesv1alpha1.Capability)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current := &rulesv1alpha1.Capability{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(capability), current); err != nil {
				return err
			}
			edit(current)
			return k8s.Update(ctx, current)
		})
	}
	err := update(func(c *rulesv1alpha1.Capability) {
		c.Spec.Profiles = slices.DeleteFunc(c.Spec.Profiles, func(p string) bool { return p == "filesystem" })
	})
	msg := hasCause(t, causes(t, err), "spec.profiles", "OAR-FACT-19", "acme.security/READ_OUTSIDE_SCOPE")
	if !strings.Contains(msg, `RulePack "files"`) {
		t.Errorf("the refusal does not name the pack: %q", msg)
	}
	t.Logf("kubectl: %v", err)
	if err := update(func(c *rulesv1alpha1.Capability) { c.Spec.Profiles = append(c.Spec.Profiles, "mcp") }); err != nil {
		t.Errorf("an update that keeps the pack loading was refused: %v", err)
	}
	if err := update(func(c *rulesv1alpha1.Capability) { c.Labels = map[string]string{"team": "platform"} }); err != nil {
		t.Errorf("a metadata-only update was refused: %v", err)
	}
}

// TestCapabilityCreateWarnsAboutPacks: packs naming a Capability before it exists that
// do not load against it are listed in warnings on its creation.
func TestCapabilityCreateWarnsAboutPacks(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	early := rulePack(t, ns, "early", "late", 0, []map[string]any{
		with(rule("acme.security", "READ_OUTSIDE_SCOPE"), "requires", map[string]any{"profiles": []any{"tool", "mcp"}}),
	})
	mustCreate(t, early)
	seen(t, early)
	c, warned := warningClient(t)
	if err := c.Create(context.Background(), capabilityObject(ns, "late", gatewaySpec()), client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	t.Logf("warning: %s", hasWarning(t, warned.take(), "[OAR-FACT-19]", `RulePack "early" spec.rules[0].requires.profiles[1]`, "acme.security/READ_OUTSIDE_SCOPE"))
}
