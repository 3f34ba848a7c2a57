package bundle

import (
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// narrowCapability is the test capability without the tool profile.
func narrowCapability(t *testing.T) map[string]any {
	c := capability(t)
	c["profiles"] = []any{"session", "content"}
	return c
}

// toolRule needs the tool profile ([OAR-FACT-19] without it).
func toolRule(t *testing.T, ns, id string) any {
	return rule(t, ns, id, `"requires":{"profiles":["tool"]}`)
}

// TestNarrowedCapabilityKeepsTheCurrentBundle: a valid capability document that would
// leave out a published pack is held back: the current bundle stays, the result names
// the pack and the rule in the webhook's words, and the pack says why it is held.
func TestNarrowedCapabilityKeepsTheCurrentBundle(t *testing.T) {
	packs := []PackInput{pack("tools", 1, 0, toolRule(t, "acme", "SHELL")), pack("plain", 1, 1, rule(t, "acme", "PLAIN"))}
	current := mustAssemble(t, Input{Capability: capability(t), Packs: packs}).Bundle

	res := mustAssemble(t, Input{Capability: narrowCapability(t), Packs: packs, Current: current})
	if res.Bundle != current || res.Changed {
		t.Fatalf("the narrowed capability published %v (changed %v); want the current bundle kept", published(res.Bundle), res.Changed)
	}
	if !slices.Equal(res.Held, []string{`RulePack "tools"`}) {
		t.Errorf("held %v, want the tools pack", res.Held)
	}
	if len(res.Narrowing) == 0 {
		t.Fatal("no narrowing diagnostics")
	}
	n := res.Narrowing[0]
	if n.Clause != "OAR-FACT-19" || n.Field != "spec.profiles" || n.Rule != "acme/SHELL" ||
		!strings.Contains(n.Message, `published RulePack "tools" would stop loading at spec.rules[0].requires.profiles[0]`) {
		t.Errorf("narrowing diagnostic %+v", n)
	}
	o := res.Packs["tools"]
	if o.Reason != ReasonCapabilityNarrowed || o.PublishedGeneration != 1 || !hasDiag(o.Errors, "OAR-FACT-19", "requires.profiles[0]") || o.Errors[0].Index != 0 {
		t.Errorf("tools outcome %+v", o)
	}
	if o := res.Packs["plain"]; o.Reason != ReasonCapabilityNarrowed || o.PublishedGeneration != 1 || len(o.Errors) != 0 {
		t.Errorf("plain outcome %+v", o)
	}
}

// TestNarrowedCapabilityPublishesOnceNothingPublishedIsLost: fixing the pack, or
// deleting it, lets the narrowed document publish; so does a newcomer that does not
// load against it (nothing of it was published), and a first publication has nothing
// to keep.
func TestNarrowedCapabilityPublishesOnceNothingPublishedIsLost(t *testing.T) {
	tools := pack("tools", 1, 0, toolRule(t, "acme", "SHELL"))
	plain := pack("plain", 1, 1, rule(t, "acme", "PLAIN"))
	current := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{tools, plain}}).Bundle
	fixed := pack("tools", 2, 0, rule(t, "acme", "SHELL"))
	for _, c := range []struct {
		name  string
		in    Input
		want  []string
		notIn string
	}{
		{"the pack fixed", Input{Packs: []PackInput{fixed, plain}, Current: current}, []string{"tools@2", "plain@1"}, ""},
		{"the pack deleted", Input{Packs: []PackInput{plain}, Current: current}, []string{"plain@1"}, ""},
		{"a newcomer that needs the profile", Input{Packs: []PackInput{fixed, plain, pack("late", 1, 2, toolRule(t, "acme", "LATE"))}, Current: current},
			[]string{"tools@2", "plain@1"}, "late"},
		{"nothing published before", Input{Packs: []PackInput{tools, plain}}, []string{"plain@1"}, "tools"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.Capability = narrowCapability(t)
			res := mustAssemble(t, c.in)
			if len(res.Held) > 0 || len(res.Narrowing) > 0 {
				t.Errorf("held %v: %v", res.Held, res.Narrowing)
			}
			if got := published(res.Bundle); !slices.Equal(got, c.want) {
				t.Errorf("published %v, want %v", got, c.want)
			}
			if c.notIn != "" {
				if o := res.Packs[c.notIn]; o.Reason != ReasonLoadFailed || !hasDiag(o.Errors, "OAR-FACT-19", "") {
					t.Errorf("%s outcome %+v", c.notIn, o)
				}
			}
		})
	}
}

// TestNewIdentityIsANewcomer: a pack or configuration created again under the name of a
// published one inherits nothing of it: its generation that does not load is left out
// rather than the deleted object's generation kept, and a narrowed capability that
// leaves it out publishes.
func TestNewIdentityIsANewcomer(t *testing.T) {
	cfgDoc := config(t, `{"oar_config":"1.0","enforcement":{"acme/SHELL":"monitor"}}`)
	current := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{pack("tools", 2, 0, toolRule(t, "acme", "SHELL"))},
		Configs: []ConfigInput{{Name: "tune", Generation: 3, Document: cfgDoc}}}).Bundle
	if got := published(current); !slices.Equal(got, []string{"tools@2"}) || len(current.Configs) != 1 {
		t.Fatalf("setup published %v %v", got, publishedConfigs(current))
	}
	bad := pack("tools", 1, 5, rule(t, "acme", "SHELL", `"when":"nope"`))
	bad.NewIdentity = true
	badCfg := ConfigInput{Name: "tune", Generation: 1, Document: config(t, `{"oar_config":"1.0","disable":["acme/GONE"]}`), NewIdentity: true}
	res := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{bad}, Configs: []ConfigInput{badCfg}, Current: current})
	if len(res.Bundle.Packs) != 0 || len(res.Bundle.Configs) != 0 {
		t.Errorf("published %v %v; the deleted objects' generations must not serve", published(res.Bundle), publishedConfigs(res.Bundle))
	}
	if o := res.Packs["tools"]; o.PublishedGeneration != 0 || o.Reason != ReasonLoadFailed {
		t.Errorf("tools outcome %+v", o)
	}
	if o := res.Configs["tune"]; o.PublishedGeneration != 0 || o.Reason != ReasonLoadFailed {
		t.Errorf("tune outcome %+v", o)
	}

	recreated := pack("tools", 1, 5, toolRule(t, "acme", "SHELL"))
	recreated.NewIdentity = true
	res = mustAssemble(t, Input{Capability: narrowCapability(t), Packs: []PackInput{recreated}, Current: current})
	if len(res.Held) > 0 || len(res.Bundle.Packs) != 0 {
		t.Errorf("held %v, published %v; a newcomer never holds a capability back", res.Held, published(res.Bundle))
	}
	res = mustAssemble(t, Input{Packs: []PackInput{recreated}, Current: current})
	if o := res.Packs["tools"]; o.PublishedGeneration != 0 {
		t.Errorf("with the Capability missing, the new object claims the deleted one's generation: %+v", o)
	}
}

// TestBreakageNamesTheNarrowedMember: what a published rule stops loading for under a
// narrower capability is named at the member of the Capability that no longer provides
// it, as precisely as the two documents tell: the entry of a host fact whose type
// changed, the entry declaring a core anchor unsupported, the list a fact, a profile or a
// host anchor left — whether the rule names it in requires, a condition ([OAR-FACT-3]),
// a type-checked comparison, a selector, a counter scope or copy ([OAR-COPY-2]).
func TestBreakageNamesTheNarrowedMember(t *testing.T) {
	withoutTier := func(c map[string]any) { c["host_facts"] = []any{} }
	tierAnInt := func(c map[string]any) {
		c["host_facts"] = []any{map[string]any{"name": "oar.test.other", "type": "string"}, map[string]any{"name": "oar.test.tier", "type": "int"}}
	}
	withoutTool := func(c map[string]any) { c["profiles"] = []any{"session", "content"} }
	tier := `"requires":{"facts":["oar.test.tier"]}`
	// facts declares the host facts a and b with the types given, in that order.
	facts := func(a, b string) func(map[string]any) {
		return func(c map[string]any) {
			c["host_facts"] = []any{map[string]any{"name": "oar.test.a", "type": a}, map[string]any{"name": "oar.test.b", "type": b}}
		}
	}
	ab := `"requires":{"facts":["oar.test.a","oar.test.b"]}`
	for _, c := range []struct {
		clause string
		rule   any
		narrow func(map[string]any)
		field  string
		// before, when set, changes the capability the rule loads under first.
		before func(map[string]any)
	}{
		{"OAR-FACT-3", rule(t, "acme", "A", tier, `"when":"oar.test.tier == \"gold\""`), withoutTier, "spec.host_facts", nil},
		{"OAR-FACT-3", rule(t, "acme", "A", `"requires":{"profiles":["tool"]}`, `"when":"tool == \"oar.test.tier\""`), withoutTool, "spec.profiles", nil},
		{"OAR-EXPR-11", rule(t, "acme", "A", tier, `"when":"oar.test.tier == \"gold\""`), tierAnInt, "spec.host_facts[1].type", nil},
		{"OAR-FIRE-10", rule(t, "acme", "A", tier, `"counter_scope":"oar.test.tier"`), tierAnInt, "spec.host_facts[1].type", nil},
		{"OAR-COPY-2", rule(t, "acme", "A", tier, `"copy":{"what":"tool tier {{ oar.test.tier }}"}`), withoutTier, "spec.host_facts", nil},
		{"OAR-SEL-3", rule(t, "acme", "A", `"requires":{"profiles":["tool"]}`, `"selector":{"tool":["read"]}`), withoutTool, "spec.profiles", nil},
		{"OAR-FACT-19", rule(t, "acme", "A", `"requires":{"facts":["tool_args"]}`), withoutTool, "spec.profiles", nil},
		{"OAR-FACT-19", rule(t, "acme", "A", tier), withoutTier, "spec.host_facts", nil},
		{"OAR-PROF-4", rule(t, "acme", "A", `"anchor":"model.output"`), func(c map[string]any) {
			anchors := c["anchors"].(map[string]any)
			delete(anchors["core"].(map[string]any), "model.output")
			anchors["unsupported"] = append(anchors["unsupported"].([]any), "model.output")
		}, "spec.anchors.unsupported[6]", nil},
		{"OAR-DOC-12", rule(t, "acme", "A", `"anchor":"gw.render"`), func(c map[string]any) { c["anchors"].(map[string]any)["host"] = []any{} }, "spec.anchors.host", nil},
		{"OAR-FACT-13", rule(t, "acme", "A", `"requires":{"profiles":["session"]}`, `"flow":["a","b","c"]`), func(c map[string]any) { c["activity_window"] = 2 }, "spec.activity_window", nil},
		// A type error's offset is its operator's: the operand next to it names the fact,
		// not the first narrowed one of the condition, nor one past && ...
		{"OAR-EXPR-11", rule(t, "acme", "A", ab, `"when":"oar.test.a == 1 && oar.test.b == \"x\""`), facts("double", "int"), "spec.host_facts[1].type", facts("int", "string")},
		{"OAR-EXPR-11", rule(t, "acme", "A", ab, `"when":"oar.test.b == \"x\" && oar.test.a == 1"`), facts("double", "int"), "spec.host_facts[1].type", facts("int", "string")},
		// ... and two narrowed operands name the list that holds both.
		{"OAR-EXPR-11", rule(t, "acme", "A", ab, `"when":"oar.test.a == oar.test.b"`), facts("string", "double"), "spec.host_facts", facts("int", "int")},
	} {
		t.Run(c.clause+" "+c.field, func(t *testing.T) {
			base := capability(t)
			if c.before != nil {
				c.before(base)
			}
			narrow := capability(t)
			if c.before != nil {
				c.before(narrow)
			}
			c.narrow(narrow)
			before, errs := engine.LoadCapability(base)
			after, moreErrs := engine.LoadCapability(narrow)
			if len(errs)+len(moreErrs) > 0 {
				t.Fatalf("the test's capabilities do not load: %v %v", errs, moreErrs)
			}
			published := &Bundle{Capability: base, Packs: []Pack{{Name: "p", Generation: 1, Rules: []any{c.rule}}}}
			if _, le := load(published); le != nil {
				t.Fatalf("the rule does not load before the narrowing: %v", le)
			}
			published.Capability = narrow
			_, le := load(published)
			if le == nil {
				t.Fatal("the rule still loads after the narrowing")
			}
			got := Breakage(le, before, after)
			if !hasDiag(got, c.clause, c.field) {
				t.Errorf("breakage %v; want [%s] at %s", got, c.clause, c.field)
			}
		})
	}

	// The controller holds the narrowing back with the same words.
	current := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{pack("tiers", 1, 0, rule(t, "acme", "A", tier, `"when":"oar.test.tier == \"gold\""`))}}).Bundle
	narrow := capability(t)
	withoutTier(narrow)
	res := mustAssemble(t, Input{Capability: narrow, Packs: []PackInput{pack("tiers", 1, 0, rule(t, "acme", "A", tier, `"when":"oar.test.tier == \"gold\""`))}, Current: current})
	if !hasDiag(res.Narrowing, "OAR-FACT-3", "spec.host_facts") || !hasDiag(res.Narrowing, "OAR-FACT-19", "spec.host_facts") {
		t.Errorf("narrowing %v; want [OAR-FACT-3] and [OAR-FACT-19] at spec.host_facts", res.Narrowing)
	}
}
