package admission

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// benchRule is a realistic rule of pack p: a selector, a condition of about twenty nodes,
// counters and copy with a binding. Every 50th rule of the large pack overrides a rule of
// one of the small packs and counts another one's firings, so references into other packs
// are resolved and checked too.
func benchRule(p string, i int, small bool) map[string]any {
	r := map[string]any{
		"oar": "1.0", "namespace": "bench." + p, "id": fmt.Sprintf("RULE_%04d", i),
		"kind": []string{"schema", "policy", "invariant"}[i%3], "anchor": "tool.pre_invoke",
		"selector": map[string]any{"tool": []any{fmt.Sprintf("tool_%d", i%50)}},
		"requires": map[string]any{"profiles": []any{"tool", "session"}},
		"when":     fmt.Sprintf(`tool_arg_int("size") > %d && (starts_with(tool_arg_string("path"), "/etc") || "admin" in principal_roles) && fire_count < 5`, i),
		"effect":   []string{"warn", "nudge", "allow"}[i%3],
		"on_fire":  []any{"increment_counter"},
		"copy":     map[string]any{"what": "{{ tool }} touched a protected path", "fix": "{% if principal %}Ask {{ principal }}{% else %}Ask an owner{% endif %}."},
	}
	if !small && i%50 == 0 {
		other := fmt.Sprintf("bench.small%02d/RULE_%04d", (i/50)%50, i%10)
		r["overrides"] = []any{other}
		r["when"] = fmt.Sprintf(`fire_count_of("bench.small%02d/RULE_0001") < 3 && tool_arg_int("size") > %d`, (i/50+1)%50, i)
	}
	return r
}

// benchValidation is a 1,000-rule pack and a Capability with 50 packs of 10 rules bound
// and published, with two published configurations and the objects they are published
// for (resource.PublishedUIDs), as the controller records them.
func benchValidation(tb testing.TB) (*RulePackValidator, *rulesv1alpha1.RulePack) {
	tb.Helper()
	const ns = "bench"
	capability := capabilityObject(ns, "gateway", gatewaySpec())
	doc, err := resource.CapabilityDocument(capability)
	if err != nil {
		tb.Fatal(err)
	}
	mem := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capability}}
	published := &bundle.Bundle{Capability: doc}
	uids := &resource.PublishedUIDs{Packs: map[string]types.UID{}, Configs: map[string]types.UID{}}
	for p := range 50 {
		name := fmt.Sprintf("small%02d", p)
		rules := make([]map[string]any, 10)
		for i := range rules {
			rules[i] = benchRule(name, i, true)
		}
		pack := rulePack(tb, ns, name, "gateway", 1, rules)
		pack.UID = types.UID("uid-of-" + name)
		uids.Packs[name] = pack.UID
		mem.packs = append(mem.packs, *pack)
		decodedRules, errs := resource.PackRules(pack)
		if len(errs) > 0 {
			tb.Fatal(errs)
		}
		published.Packs = append(published.Packs, bundle.Pack{Name: name, Generation: 1, Rules: decodedRules})
	}
	for i, ref := range []string{"bench.small00/RULE_0003", "bench.small07/RULE_0005"} {
		doc := map[string]any{"oar_config": "1.0", "enforcement": map[string]any{ref: "monitor"}}
		oc := operatorConfig(tb, ns, fmt.Sprintf("config%d", i), "gateway", doc)
		oc.UID, oc.Generation, oc.Spec.Order = types.UID("uid-of-"+oc.Name), 1, int64(i)
		mem.configs = append(mem.configs, *oc)
		published.Configs = append(published.Configs, bundle.Config{Name: oc.Name, Generation: 1, Order: oc.Spec.Order, Document: doc})
		uids.Configs[oc.Name] = oc.UID
	}
	if _, err := bundle.Load(published); err != nil {
		tb.Fatal(err)
	}
	mem.bundles = map[types.NamespacedName]*bundle.Bundle{{Namespace: ns, Name: "gateway"}: published}
	mem.uids = map[types.NamespacedName]*resource.PublishedUIDs{{Namespace: ns, Name: "gateway"}: uids}
	rules := make([]map[string]any, 1000)
	for i := range rules {
		rules[i] = benchRule("large", i, false)
	}
	large := rulePack(tb, ns, "large", "gateway", 1, rules)
	large.UID = "uid-of-large"
	return &RulePackValidator{Cluster: mem}, large
}

// stampPack is the benchmark's 1,000-rule pack with a stamp in every rule's copy and,
// when conditions is set, in every rule's condition: a number of fixed width that
// (*stampedPack).next overwrites in place, so that every rule is new to the validator
// without building the pack again between two validations.
func stampPack(tb testing.TB, pack *rulesv1alpha1.RulePack, conditions bool) *stampedPack {
	tb.Helper()
	const stamp = "1000000000"
	p := pack.DeepCopy()
	s := &stampedPack{pack: p, n: 1000000000}
	for i := range p.Spec.Rules {
		r := benchRule("large", i, false)
		r["copy"] = map[string]any{"what": "{{ tool }} touched a protected path, stamp " + stamp}
		if conditions {
			r["when"] = r["when"].(string) + ` && tool_arg_int("stamp") != ` + stamp
		}
		raw := rawRules(tb, []map[string]any{r})[0].Raw
		for at := 0; ; {
			j := bytes.Index(raw[at:], []byte(stamp))
			if j < 0 {
				break
			}
			s.at = append(s.at, stampAt{i, at + j})
			at += j + len(stamp)
		}
		p.Spec.Rules[i].Raw = raw
	}
	return s
}

// stampedPack is a pack whose rules carry stamps at the places at.
type stampedPack struct {
	pack *rulesv1alpha1.RulePack
	at   []stampAt
	n    int
}

// stampAt is where a stamp is: in the rule rule's JSON, from byte offset.
type stampAt struct{ rule, offset int }

// next writes the next stamp into every rule.
func (s *stampedPack) next() {
	s.n++
	stamp := strconv.Itoa(s.n)
	for _, a := range s.at {
		copy(s.pack.Spec.Rules[a.rule].Raw[a.offset:], stamp)
	}
}

// BenchmarkValidateRulePack1000Rules validates a 1,000-rule pack against a Capability
// with 50 other packs of 10 rules bound and published, on the validator with an
// in-memory Cluster: "same" validates the same pack each time (a dry run, then the
// apply: the load is kept), "edited" a pack with one rule's copy changed each time (a
// GitOps change: the other conditions are kept), "cold" forgets the kept loads and
// conditions each time (the conditions checked again, the rules decoded before), "new"
// a pack with every rule's copy changed each time (every rule decoded and parsed again,
// the conditions kept), "new-conditions" a pack with every rule's copy and condition
// changed each time, nothing kept from before (a pack applied for the first time).
// Goal: p99 under 20 ms (see TestValidationLatency).
func BenchmarkValidateRulePack1000Rules(b *testing.B) {
	v, pack := benchValidation(b)
	ctx := context.Background()
	for _, c := range []struct {
		name         string
		edited, cold bool
	}{{"same", false, false}, {"edited", true, false}, {"cold", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			p := pack.DeepCopy()
			edit := benchRule("large", 0, false)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if c.edited {
					i++
					edit["copy"] = map[string]any{"what": fmt.Sprintf("edit %d", i)}
					p.Spec.Rules[0] = rawRules(b, []map[string]any{edit})[0]
				}
				if c.cold {
					loads.forget()
					conditions.forget()
				}
				if w, err := v.ValidateCreate(ctx, p); err != nil || len(w) > 0 {
					b.Fatal(w, err)
				}
			}
		})
	}
	for _, c := range []struct {
		name       string
		conditions bool
	}{{"new", false}, {"new-conditions", true}} {
		b.Run(c.name, func(b *testing.B) {
			s := stampPack(b, pack, c.conditions)
			b.ReportAllocs()
			for b.Loop() {
				s.next()
				if w, err := v.ValidateCreate(ctx, s.pack); err != nil || len(w) > 0 {
					b.Fatal(w, err)
				}
			}
		})
	}
}

// TestValidationLatency logs the p50 and p99 of validations of the benchmark's pack in
// four cases: the same pack each time (a dry run, then the apply; 200 validations), one
// rule edited each time (a GitOps change; 100), every rule new each time (nothing decoded
// before, the conditions checked before; 100), every rule and its condition new each
// time (nothing decoded or checked before: a pack applied for the first time; 100). It
// measures and asserts no timing.
func TestValidationLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 400 validations")
	}
	v, pack := benchValidation(t)
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		validations int
		changed     int  // how many rules each validation changes
		conditions  bool // whether it changes their conditions too
	}{
		{"same pack", 200, 0, false},
		{"one rule edited", 100, 1, false},
		{"every rule new", 100, len(pack.Spec.Rules), false},
		{"every rule and condition new", 100, len(pack.Spec.Rules), true},
	} {
		if _, err := v.ValidateCreate(ctx, pack); err != nil {
			t.Fatal(err)
		}
		durations := make([]time.Duration, c.validations)
		for i := range durations {
			p := pack.DeepCopy()
			for j := range c.changed {
				r := benchRule("large", j, false)
				r["copy"] = map[string]any{"what": fmt.Sprintf("%s, validation %d", c.name, i)}
				if c.conditions {
					r["when"] = fmt.Sprintf(`%s && tool_arg_int("validation") != %d`, r["when"], i)
				}
				p.Spec.Rules[j] = rawRules(t, []map[string]any{r})[0]
			}
			start := time.Now()
			if w, err := v.ValidateCreate(ctx, p); err != nil || len(w) > 0 {
				t.Fatal(w, err)
			}
			durations[i] = time.Since(start)
		}
		slices.Sort(durations)
		t.Logf("1,000-rule pack, 50 published packs of 10 rules, %s: p50 %v, p99 %v, max %v over %d validations",
			c.name, durations[len(durations)/2].Round(100*time.Microsecond), durations[len(durations)*99/100-1].Round(100*time.Microsecond),
			durations[len(durations)-1].Round(100*time.Microsecond), len(durations))
	}
}
