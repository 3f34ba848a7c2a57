package admission

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// TestCapabilityNarrowingNamesTheMember: an update refused because published rules
// would stop loading names, for each problem, the member of the Capability whose
// narrowing causes it, as precisely as the published and the new document tell — not
// spec: the host fact's list or its entry whose type changed, the profile list for a
// profile's function ([OAR-FACT-3]), the entry declaring a core anchor unsupported
// ([OAR-PROF-4]).
func TestCapabilityNarrowingNamesTheMember(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	capability := capabilityObject(ns, "gateway", gatewaySpec())
	mustCreate(t, capability)
	packs := []*rulesv1alpha1.RulePack{
		rulePack(t, ns, "tiers", "gateway", 0, []map[string]any{with(rule("acme.tiers", "GOLD"),
			"requires", map[string]any{"profiles": []any{"tool"}, "facts": []any{"acme.gateway.tenant_tier"}},
			"when", `acme.gateway.tenant_tier == "gold"`, "copy", map[string]any{"what": "Tier {{ acme.gateway.tenant_tier }}."})}),
		rulePack(t, ns, "files", "gateway", 0, []map[string]any{rule("acme.files", "READ_OUTSIDE_SCOPE")}),
		rulePack(t, ns, "output", "gateway", 0, []map[string]any{with(rule("acme.output", "SEEN"),
			"anchor", "model.output", "selector", nil, "requires", nil, "when", "true", "copy", map[string]any{"what": "An output."})}),
	}
	for _, p := range packs {
		mustCreate(t, p)
	}
	published(t, ns, "gateway", packs)

	for _, c := range []struct {
		name   string
		narrow func(*rulesv1alpha1.CapabilitySpec)
		want   [][2]string // clause, field
	}{
		{"a host fact removed", func(s *rulesv1alpha1.CapabilitySpec) { s.HostFacts = s.HostFacts[:1] },
			[][2]string{{"OAR-FACT-3", "spec.host_facts"}, {"OAR-COPY-2", "spec.host_facts"}, {"OAR-FACT-19", "spec.host_facts"}}},
		{"a host fact's type changed", func(s *rulesv1alpha1.CapabilitySpec) { s.HostFacts[1].Type = "int" },
			[][2]string{{"OAR-EXPR-11", "spec.host_facts[1].type"}}},
		{"the profile of a function removed", func(s *rulesv1alpha1.CapabilitySpec) {
			s.Profiles = slices.DeleteFunc(s.Profiles, func(p string) bool { return p == "filesystem" })
		}, [][2]string{{"OAR-FACT-3", "spec.profiles"}, {"OAR-FACT-19", "spec.profiles"}}},
		{"a core anchor declared unsupported", func(s *rulesv1alpha1.CapabilitySpec) {
			delete(s.Anchors.Core, "model.output")
			s.Anchors.Unsupported = append(s.Anchors.Unsupported, "model.output")
		}, [][2]string{{"OAR-PROF-4", "spec.anchors.unsupported[4]"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The controller may write the Capability between the read and the update.
			var err error
			if rerr := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				current := &rulesv1alpha1.Capability{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(capability), current); err != nil {
					t.Fatal(err)
				}
				c.narrow(&current.Spec)
				err = k8s.Update(ctx, current, client.DryRunAll)
				return err
			}); rerr != nil && apierrors.IsConflict(rerr) {
				t.Fatalf("the update conflicted at every attempt: %v", rerr)
			}
			cs := causes(t, err)
			for _, w := range c.want {
				hasCause(t, cs, w[1], w[0], "")
			}
			for _, cause := range cs {
				if cause.Field == "spec" {
					t.Errorf("a cause names no member: %s", cause.Message)
				}
			}
			t.Logf("kubectl: %v", err)
		})
	}
}
