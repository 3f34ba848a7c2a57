package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// TestRulePackRefusals sends each class of refusal through the API server: the cause
// names the field, the clause and the rule.
func TestRulePackRefusals(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	read := rule("acme.security", "READ_OUTSIDE_SCOPE")
	write := rule("acme.security", "WRITE_OUTSIDE_SCOPE")
	const readID, writeID = "acme.security/READ_OUTSIDE_SCOPE", "acme.security/WRITE_OUTSIDE_SCOPE"
	for _, c := range []struct {
		name                string
		rules               []map[string]any
		field, clause, rule string
	}{
		{"a rule the loader rejects: unknown identifier", []map[string]any{read, with(write, "when", "pth == 1")},
			"spec.rules[1].when", "OAR-FACT-3", writeID},
		{"a rule the loader rejects: version gate", []map[string]any{with(read, "oar", "2.0")},
			"spec.rules[0].oar", "OAR-DOC-4", readID},
		{"a rule the loader rejects: profile the capability lacks", []map[string]any{with(read, "requires", map[string]any{"profiles": []any{"tool", "mcp"}})},
			"spec.rules[0].requires.profiles[1]", "OAR-FACT-19", readID},
		{"a rule the loader rejects: unsupported anchor", []map[string]any{with(read, "anchor", "agent.finalize")},
			"spec.rules[0].anchor", "OAR-PROF-4", readID},
		{"a rule the loader rejects: unknown member", []map[string]any{with(read, "severity", "high")},
			"spec.rules[0].severity", "OAR-DOC-27", readID},
		{"a duplicate within the pack", []map[string]any{read, read},
			"spec.rules[1].id", "OAR-DOC-9", readID},
		{"a cycle within the pack", []map[string]any{with(read, "overrides", []any{"WRITE_OUTSIDE_SCOPE"}), with(write, "overrides", []any{"READ_OUTSIDE_SCOPE"})},
			"spec.rules[0].overrides", "OAR-EVAL-16", readID},
		{"an override no pack defines", []map[string]any{with(read, "overrides", []any{"acme.nowhere/GONE"})},
			"spec.rules[0].overrides[0]", "OAR-EVAL-13", readID},
		{"an on_error no pack defines", []map[string]any{with(read, "on_error", "acme.nowhere/GONE")},
			"spec.rules[0].on_error", "OAR-OPS-5", readID},
		{"a counter of a rule no pack defines", []map[string]any{with(read, "when", `fire_count_of("acme.nowhere/GONE") > 2`)},
			"spec.rules[0].when", "OAR-FIRE-11", readID},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := k8s.Create(context.Background(), rulePack(t, ns, "refused", "gateway", 0, c.rules))
			hasCause(t, causes(t, err), c.field, c.clause, c.rule)
			t.Logf("kubectl: %v", err)
		})
	}
}

// TestRulePackUnquotedVersion: YAML's `oar: 1.0` reaches the webhook as a number; the
// refusal says that oar must be a string and to quote it, and shows no value as if the
// number were the version.
func TestRulePackUnquotedVersion(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	err := k8s.Create(context.Background(), rulePack(t, ns, "unquoted", "gateway", 0,
		[]map[string]any{with(rule("acme.security", "READ_OUTSIDE_SCOPE"), "oar", json.Number("1.0"))}))
	msg := hasCause(t, causes(t, err), "spec.rules[0].oar", "OAR-DOC-3", "acme.security/READ_OUTSIDE_SCOPE")
	for _, want := range []string{"oar must be a string", "quote", `oar: "1.0"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	if strings.HasPrefix(msg, "Invalid value: 1") {
		t.Errorf("the refusal echoes the number as the offending value: %q", msg)
	}
	t.Logf("kubectl: %v", err)
}

// TestRulePackRefusalIsCapped: a pack with more problems than a response lists gets the
// first ones and one cause counting the rest.
func TestRulePackRefusalIsCapped(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	rules := make([]map[string]any, maxCauses+5)
	for i := range rules {
		rules[i] = with(rule("acme.security", fmt.Sprintf("RULE_%d", i)), "when", "pth == 1")
	}
	err := k8s.Create(context.Background(), rulePack(t, ns, "many", "gateway", 0, rules))
	cs := causes(t, err)
	t.Logf("kubectl: %v", err)
	if len(cs) != maxCauses+1 {
		t.Fatalf("got %d causes, want %d", len(cs), maxCauses+1)
	}
	if last := cs[maxCauses]; !strings.Contains(last.Message, "5 more problems") {
		t.Errorf("the last cause does not count the rest: %q", last.Message)
	}
}

// TestRulePackWithoutCapability: with no Capability only the checks that need none run;
// the pack is admitted with a warning saying so, or refused for what they find.
func TestRulePackWithoutCapability(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	c, warned := warningClient(t)
	ctx := context.Background()
	read := rule("acme.security", "READ_OUTSIDE_SCOPE")
	// A condition that names no declared fact is not checked without a capability.
	if err := c.Create(ctx, rulePack(t, ns, "early", "absent", 0, []map[string]any{with(read, "when", "pth == 1")})); err != nil {
		t.Fatal(err)
	}
	w := hasWarning(t, warned.take(), "spec.capabilityRef.name", `Capability "absent" does not exist`, "the version gate")
	t.Logf("warning: %s", w)
	err := c.Create(ctx, rulePack(t, ns, "malformed", "absent", 0, []map[string]any{with(read, "id", "read-outside-scope")}))
	hasCause(t, causes(t, err), "spec.rules[0].id", "OAR-DOC-6", "")
	hasWarning(t, warned.take(), `Capability "absent" does not exist`)
}

// TestRulePackWarnings sets up published packs and a published configuration, then
// checks each warning a pack gets for what depends on other objects.
func TestRulePackWarnings(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	ext := rulePack(t, ns, "ext", "gateway", 0, []map[string]any{rule("acme.ext", "CHECK")})
	mustCreate(t, ext)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{ext})
	base := rulePack(t, ns, "base", "gateway", 0, []map[string]any{
		rule("acme.base", "PLAIN"),
		with(rule("acme.base", "AUDIT"), "mandatory", true),
		with(rule("acme.base", "RELAX"), "overrides", []any{"acme.ext/CHECK"}),
	})
	mustCreate(t, base)
	mustCreate(t, operatorConfig(t, ns, "rollout", "gateway", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.ext/CHECK": "monitor"}}))
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{ext, base}, "rollout")
	// shadow duplicates a published rule, so the controller leaves it out.
	shadow := rulePack(t, ns, "shadow", "gateway", 0, []map[string]any{rule("acme.base", "PLAIN"), rule("acme.shadow", "UNIQUE")})
	mustCreate(t, shadow)
	seen(t, shadow)

	c, warned := warningClient(t)
	dryRun := func(t *testing.T, p *rulesv1alpha1.RulePack, update bool) []string {
		t.Helper()
		var err error
		if update {
			// The controller writes the status meanwhile: retry on a conflict.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				current := &rulesv1alpha1.RulePack{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), current); err != nil {
					return err
				}
				current.Spec = p.Spec
				warned.take()
				return c.Update(ctx, current, client.DryRunAll)
			})
		} else {
			err = c.Create(ctx, p, client.DryRunAll)
		}
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return warned.take()
	}
	t.Run("duplicate in another pack", func(t *testing.T) {
		ws := dryRun(t, rulePack(t, ns, "dup", "gateway", 0, []map[string]any{rule("acme.base", "PLAIN")}), false)
		t.Logf("warning: %s", hasWarning(t, ws, "[OAR-DOC-9]", "spec.rules[0].id", "acme.base/PLAIN", `RulePack "base"`))
	})
	t.Run("reference to a rule only an unpublished pack has", func(t *testing.T) {
		ws := dryRun(t, rulePack(t, ns, "user", "gateway", 0, []map[string]any{with(rule("acme.user", "NARROW"), "overrides", []any{"acme.shadow/UNIQUE"})}), false)
		t.Logf("warning: %s", hasWarning(t, ws, "[OAR-EVAL-13]", "spec.rules[0].overrides[0]", "acme.shadow/UNIQUE", `RulePack "shadow"`, "not published"))
	})
	t.Run("override of another pack's mandatory rule", func(t *testing.T) {
		ws := dryRun(t, rulePack(t, ns, "suppress", "gateway", 0, []map[string]any{with(rule("acme.user", "QUIET"), "overrides", []any{"acme.base/AUDIT"})}), false)
		t.Logf("warning: %s", hasWarning(t, ws, "[OAR-EVAL-17]", "spec.rules[0].overrides[0]", "acme.base/AUDIT", `RulePack "base"`))
	})
	t.Run("cycle across packs", func(t *testing.T) {
		ws := dryRun(t, rulePack(t, ns, "ext", "gateway", 0, []map[string]any{with(rule("acme.ext", "CHECK"), "overrides", []any{"acme.base/RELAX"})}), true)
		t.Logf("warning: %s", hasWarning(t, ws, "[OAR-EVAL-16]", "spec.rules[0].overrides", "acme.ext/CHECK -> acme.base/RELAX", `RulePack "base"`))
	})
	t.Run("update dropping a rule a published pack and configuration name", func(t *testing.T) {
		ws := dryRun(t, rulePack(t, ns, "ext", "gateway", 0, []map[string]any{rule("acme.ext", "RENAMED")}), true)
		t.Logf("warning: %s", hasWarning(t, ws, "[OAR-EVAL-13]", `RulePack "base" spec.rules[2].overrides[0]`, "acme.base/RELAX", "stop loading"))
		t.Logf("warning: %s", hasWarning(t, ws, "[OAR-CFG-4]", `OperatorConfig "rollout" spec.config.enforcement.acme.ext/CHECK`, "no longer apply"))
	})
	t.Run("unchanged spec", func(t *testing.T) {
		if ws := dryRun(t, ext, true); len(ws) > 0 {
			t.Errorf("an update that leaves spec unchanged was warned: %q", ws)
		}
	})
}
