package engine

import (
	"fmt"
	"strings"
	"testing"
)

// cycleRule is rule id of a chain, overriding the rules named.
func cycleRule(id string, overrides ...string) map[string]any {
	refs := make([]any, len(overrides))
	for i, o := range overrides {
		refs[i] = o
	}
	return map[string]any{"oar": "1.0", "id": id, "kind": "policy", "anchor": "tool.pre_invoke", "effect": "warn", "overrides": refs}
}

// cycleDiagnostics are the [OAR-EVAL-16] diagnostics of loading rules: those naming a
// cycle, and those saying more remain.
func cycleDiagnostics(t *testing.T, rules []any) (named []string, more int) {
	t.Helper()
	_, errs := LoadRules(mustCap(t, testCapability), rules)
	for _, e := range errs {
		switch {
		case e.Clause != "OAR-EVAL-16":
			t.Errorf("unexpected diagnostic %v", e)
		case strings.Contains(e.Message, "more suppression cycles"):
			more++
		default:
			named = append(named, e.Message)
		}
	}
	return named, more
}

// TestEVAL16_EveryRuleClosingACycleIsRefusedNamingTheFirstCycles: in a chain where
// each rule overrides the next and the last overrides every earlier one, each of those
// overrides closes a cycle of its own, through most of the chain. The set is refused
// ([OAR-EVAL-16]) naming the first cycle found, with every rule in it, then further
// cycles while all those named hold at most maxCycleNames rules, and one diagnostic
// saying more remain: naming all of them took memory and time of the square of the
// chain's length.
func TestEVAL16_EveryRuleClosingACycleIsRefusedNamingTheFirstCycles(t *testing.T) {
	const n = 300
	id := func(i int) string { return fmt.Sprintf("R%04d", i) }
	rules := make([]any, n)
	for i := range n - 1 {
		rules[i] = cycleRule(id(i), id(i+1))
	}
	var back []string
	for i := range n - 1 {
		back = append(back, id(i))
	}
	rules[n-1] = cycleRule(id(n-1), back...)
	named, more := cycleDiagnostics(t, rules)
	// The cycles through 300, 299 and 298 rules fit in maxCycleNames; the fourth not.
	if len(named) != 3 || more != 1 {
		t.Fatalf("%d cycles named and %d saying more remain, want 3 and 1", len(named), more)
	}
	// The first cycle found runs through the whole chain, back to its first rule.
	if want := id(0) + " -> " + id(1) + " -> "; !strings.Contains(named[0], want) || !strings.HasSuffix(named[0], id(n-1)+" -> "+id(0)) {
		t.Errorf("first cycle: %s", named[0])
	}
}

// TestEVAL16_ACycleLongerThanTheBoundIsNamedWhole: the first cycle is named with every
// rule in it, however many.
func TestEVAL16_ACycleLongerThanTheBoundIsNamedWhole(t *testing.T) {
	const n = maxCycleNames + 10
	id := func(i int) string { return fmt.Sprintf("R%04d", i) }
	rules := make([]any, n)
	for i := range n {
		rules[i] = cycleRule(id(i), id((i+1)%n))
	}
	named, more := cycleDiagnostics(t, rules)
	if len(named) != 1 || more != 0 || strings.Count(named[0], " -> ") != n {
		t.Fatalf("%d cycles named (the first with %d steps), %d saying more remain; want 1 with %d steps", len(named), strings.Count(named[0], " -> "), more, n)
	}
}

// TestEVAL16_ManyShortCyclesAreNamedUpToMaxCycles: pairs of rules overriding each other
// are as many cycles; the first maxCycles are named.
func TestEVAL16_ManyShortCyclesAreNamedUpToMaxCycles(t *testing.T) {
	var rules []any
	for i := range maxCycles + 5 {
		a, b := fmt.Sprintf("A%02d", i), fmt.Sprintf("B%02d", i)
		rules = append(rules, cycleRule(a, b), cycleRule(b, a))
	}
	named, more := cycleDiagnostics(t, rules)
	if len(named) != maxCycles || more != 1 {
		t.Fatalf("%d cycles named and %d saying more remain, want %d and 1", len(named), more, maxCycles)
	}
}

// TestEVAL16_ARepeatedOverrideNamesItsCycleOnce: a cycle whose back edge an overrides
// list repeats is one cycle, named once, and following the repeats costs nothing more.
func TestEVAL16_ARepeatedOverrideNamesItsCycleOnce(t *testing.T) {
	a := make([]string, 1000)
	for i := range a {
		a[i] = "A"
	}
	named, more := cycleDiagnostics(t, []any{cycleRule("A", "B"), cycleRule("B", a...)})
	if len(named) != 1 || more != 0 {
		t.Fatalf("named %q and %d saying more remain, want the one cycle", named, more)
	}
	if !strings.HasSuffix(named[0], "A -> B -> A") {
		t.Errorf("cycle: %s", named[0])
	}
}

// TestEVAL16_DistinctCyclesAreEachNamed: two cycles sharing a rule are two cycles.
func TestEVAL16_DistinctCyclesAreEachNamed(t *testing.T) {
	named, more := cycleDiagnostics(t, []any{cycleRule("A", "B"), cycleRule("B", "A", "C"), cycleRule("C", "B")})
	if len(named) != 2 || more != 0 {
		t.Fatalf("named %q, want the cycles A-B and B-C", named)
	}
}
