package engine

import (
	"fmt"
	"testing"
)

const benchCapability = `{"oar_capability_version":"1.0","host":"bench",
 "anchors":{"core":{"tool.pre_invoke":"tool.pre_invoke","model.output":"model.output"},
  "unsupported":["tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.tool_result"]},
 "profiles":["tool","session","content"],"activity_window":8,"supports_transform":true,"expression_nodes_max":1024,
 "host_facts":[{"name":"bench.spans","type":"list<map>"},{"name":"bench.tier","type":"string"}]}`

func benchCap(b testing.TB) *Capability {
	doc, err := DecodeJSON([]byte(benchCapability))
	if err != nil {
		b.Fatal(err)
	}
	c, errs := LoadCapability(doc)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return c
}

// benchRule is a realistic rule: a selector, a condition of about twenty nodes,
// counters and copy with a binding.
func benchRule(i int, tool string) map[string]any {
	return map[string]any{
		"oar": "1.0", "namespace": "bench.pack", "id": fmt.Sprintf("RULE_%04d", i),
		"kind": []string{"schema", "policy", "invariant"}[i%3], "anchor": "tool.pre_invoke",
		"selector": map[string]any{"tool": []any{tool}},
		"requires": map[string]any{"profiles": []any{"tool", "session"}},
		"when":     fmt.Sprintf(`tool_arg_int("size") > %d && (starts_with(tool_arg_string("path"), "/etc") || "admin" in principal_roles) && fire_count < 5`, i),
		"effect":   []string{"warn", "nudge", "allow"}[i%3],
		"on_fire":  []any{"increment_counter"},
		"copy":     map[string]any{"what": "{{ tool }} touched a protected path", "fix": "{% if principal %}Ask {{ principal }}{% else %}Ask an owner{% endif %}."},
	}
}

func benchProgram(b testing.TB, n, selected int) *Program {
	c := benchCap(b)
	docs := make([]any, n)
	for i := range docs {
		tool := fmt.Sprintf("tool_%d", i)
		if i < selected {
			tool = "read"
		}
		docs[i] = benchRule(i, tool)
	}
	return programOf(b, c, docs)
}

// programOf loads docs against c and configures them with no configuration.
func programOf(t testing.TB, c *Capability, docs []any) *Program {
	t.Helper()
	rs, errs := LoadRules(c, docs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, errs := Configure(rs, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}

// BenchmarkLoad1000Rules loads and compiles a 1,000-rule set. Goal: under 50 ms.
func BenchmarkLoad1000Rules(b *testing.B) {
	c := benchCap(b)
	docs := make([]any, 1000)
	for i := range docs {
		docs[i] = benchRule(i, fmt.Sprintf("tool_%d", i%50))
	}
	b.ReportAllocs()
	for b.Loop() {
		rs, errs := LoadRules(c, docs)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		if _, errs := Configure(rs, nil); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkEvaluate100Rules10Selected evaluates one occurrence against 100 rules of
// which 10 are selected. Goal: under 5 µs, a couple of allocations per selected rule.
func BenchmarkEvaluate100Rules10Selected(b *testing.B) {
	p := benchProgram(b, 100, 10)
	rt := NewMemoryRuntime()
	occ := &Occurrence{
		Anchor: "tool.pre_invoke", SessionID: "bench",
		ToolCall: &ToolCall{Name: "read", Arguments: map[string]any{"path": "/srv/data", "size": jsonInt(3)}},
		Facts:    map[string]any{"principal": "ana", "principal_roles": []any{"dev"}},
	}
	b.ReportAllocs()
	for b.Loop() {
		d := p.Evaluate(rt, occ)
		if len(d.Applied) != 10 {
			b.Fatalf("applied %v", d.Applied)
		}
	}
}

// BenchmarkEvaluateTransform50Spans redacts 50 spans reported by a list<map> fact.
func BenchmarkEvaluateTransform50Spans(b *testing.B) {
	c := benchCap(b)
	rule := map[string]any{
		"oar": "1.0", "id": "REDACT", "kind": "policy", "anchor": "model.output",
		"requires": map[string]any{"facts": []any{"bench.spans"}},
		"effect":   "transform", "transform": map[string]any{"action": "redact", "target": "bench.spans"},
	}
	rs, errs := LoadRules(c, []any{rule})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	p, _ := Configure(rs, nil)
	content := ""
	spans := make([]any, 50)
	for i := range spans {
		content += fmt.Sprintf("token %02d secret-value-%02d; ", i, i)
		start := i*len("token 00 secret-value-00; ") + len("token 00 ")
		spans[i] = map[string]any{"start": jsonInt(start), "end": jsonInt(start + len("secret-value-00"))}
	}
	occ := &Occurrence{Anchor: "model.output", Content: content, HasContent: true, Facts: map[string]any{"bench.spans": spans}}
	rt := NewMemoryRuntime()
	b.ReportAllocs()
	for b.Loop() {
		d := p.Evaluate(rt, occ)
		if d.Decision != "transform" {
			b.Fatal(d.Decision)
		}
	}
}

// readCall is a read of /srv/data, size 1000, by ana, a dev. Every rule benchProgram
// selects is evaluated at it and none fires: size 1000 is above every threshold, but
// /srv is not under /etc and the principal is no admin, so each condition reads the
// arguments and the roles. Every rule firingProgram selects fires at it.
func readCall() *Occurrence {
	return &Occurrence{
		Anchor: "tool.pre_invoke", SessionID: "bench",
		ToolCall: &ToolCall{Name: "read", Arguments: map[string]any{"path": "/srv/data", "size": jsonInt(1000)}},
		Facts:    map[string]any{"principal": "ana", "principal_roles": []any{"dev"}},
	}
}

// An evaluation at which nothing fires allocates at most three times (issue #14), and
// now once: the Decision, which carries room for a trace of 16 rules (the list<string>
// fact principal_roles is converted into the evaluation's reused storage). A longer
// trace costs one allocation more, whatever its length. The activity store's amortised
// growth is kept out by a window of zero steps.
func TestNothingFiresAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled evaluation state at random")
	}
	for _, tt := range []struct{ selected, max int }{{1, 1}, {10, 1}, {16, 1}, {40, 2}, {100, 2}} {
		p := benchProgram(t, 100, tt.selected)
		p.cap.ActivityWindow = 0
		rt := NewMemoryRuntime()
		occ := readCall()
		var d *Decision
		allocs := testing.AllocsPerRun(200, func() {
			d = p.Evaluate(rt, occ)
		})
		if len(d.Applied) != tt.selected || d.Decision != "none" {
			t.Fatalf("%d selected: decision %s, applied %v", tt.selected, d.Decision, d.Applied)
		}
		t.Logf("%d selected: %.1f allocations per evaluation", tt.selected, allocs)
		if allocs > float64(tt.max) {
			t.Errorf("%d selected rules, nothing fires: %.1f allocations per evaluation, want at most %d", tt.selected, allocs, tt.max)
		}
	}
}

// firingProgram has n rules selected at the same occurrence (readCall), each of which
// fires a nudge with copy and increments its counter scoped by principal.
func firingProgram(t testing.TB, n int) *Program {
	docs := make([]any, n)
	for i := range docs {
		docs[i] = map[string]any{
			"oar": "1.0", "namespace": "bench.pack", "id": fmt.Sprintf("FIRE_%04d", i),
			"kind": "policy", "anchor": "tool.pre_invoke", "effect": "nudge",
			"selector":      map[string]any{"tool": []any{"read"}},
			"requires":      map[string]any{"profiles": []any{"tool", "session"}},
			"when":          fmt.Sprintf(`tool_arg_int("size") > %d && "dev" in principal_roles`, i),
			"on_fire":       []any{"increment_counter"},
			"counter_scope": "principal",
			"copy":          map[string]any{"what": "{{ tool }} by {{ principal }}", "fix": "{% if principal_roles %}Roles {{ principal_roles }}.{% endif %}"},
		}
	}
	p := programOf(t, benchCap(t), docs)
	p.cap.ActivityWindow = 0
	return p
}

// Into a reused DecisionBuffer, an evaluation allocates nothing at which nothing
// fires, and at which every selected rule fires with copy and a scoped counter, the same
// two allocations however many rules fire (issue #14): the string of the copy it renders
// and the string of the scoped counters' report keys. The counters are kept in memory
// from the first run on.
func TestReusedBufferAllocationsDoNotGrowWithTheRules(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled evaluation state at random")
	}
	for _, n := range []int{1, 10, 40, 100} {
		for _, tt := range []struct {
			name   string
			p      *Program
			occ    *Occurrence
			max    float64
			result func(*Decision) bool
		}{
			{"nothing fires", benchProgram(t, 100, n), readCall(), 0, func(d *Decision) bool {
				return d.Decision == "none" && len(d.Applied) == n
			}},
			{"every rule fires", firingProgram(t, n), readCall(), 2, func(d *Decision) bool {
				return d.Decision == "nudge" && len(d.Advisories) == n && len(d.Counters) == n && d.Copy.Get("what") == "read by ana"
			}},
		} {
			p := tt.p
			p.cap.ActivityWindow = 0
			rt, buf := NewMemoryRuntime(), &DecisionBuffer{}
			var d *Decision
			allocs := testing.AllocsPerRun(200, func() { d = p.EvaluateInto(rt, tt.occ, buf) })
			if !tt.result(d) {
				t.Fatalf("%d rules, %s: decision %s, applied %v", n, tt.name, d.Decision, d.Applied)
			}
			t.Logf("%d rules, %s: %.1f allocations per evaluation", n, tt.name, allocs)
			if allocs > tt.max {
				t.Errorf("%d rules, %s: %.1f allocations per evaluation into a reused buffer, want at most %.0f", n, tt.name, allocs, tt.max)
			}
		}
	}
}

// Into a fresh DecisionBuffer, the copy object of a decision costs one allocation, the
// string of the text it renders: the buffer has room for the members of a full copy
// (where a map cost two allocations more), and two copies outgrowing it cost one more.
func TestAFreshBuffersCopyAllocatesItsTextOnly(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled evaluation state at random")
	}
	full := map[string]any{"title": "{{ tool }}", "what": "w", "cause": "c", "why": "y", "fix": "f", "instead": "i"}
	program := func(rules int, copy map[string]any) *Program {
		if copy == nil {
			return warnProgram(t, rules, "", nil)
		}
		return warnProgram(t, rules, "copy", copy)
	}
	rt, occ := NewMemoryRuntime(), readCall()
	for _, tt := range []struct {
		rules int
		more  float64
	}{{1, 1}, {2, 2}} {
		var d *Decision
		p, q := program(tt.rules, nil), program(tt.rules, full)
		without := testing.AllocsPerRun(200, func() { d = p.Evaluate(rt, occ) })
		with := testing.AllocsPerRun(200, func() { d = q.Evaluate(rt, occ) })
		if d.Decision != "warn" || len(d.Advisories) != tt.rules || d.Copy.Get("title") != "read" || len(d.Copy) != 6 {
			t.Fatalf("%d rules: decision %s, copy %q, advisories %d", tt.rules, d.Decision, d.Copy, len(d.Advisories))
		}
		t.Logf("%d rules: %.1f allocations per evaluation with copy, %.1f without", tt.rules, with, without)
		if with-without != tt.more {
			t.Errorf("%d rules firing with a full copy: %.1f allocations per evaluation into a fresh buffer, %.1f without the copy; want %.0f more", tt.rules, with, without, tt.more)
		}
	}
}

// Into a fresh DecisionBuffer, the counter report of a decision costs nothing for up to
// four counters, which the buffer has room for (where a map cost at least one
// allocation); five outgrow it, and the on_fire list's room, by one allocation each.
func TestAFreshBuffersCounterReportAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled evaluation state at random")
	}
	program := func(rules int, onFire []any) *Program { return warnProgram(t, rules, "on_fire", onFire) }
	rt, occ := NewMemoryRuntime(), readCall()
	for _, tt := range []struct {
		rules int
		more  float64
	}{{1, 0}, {2, 0}, {4, 0}, {5, 2}} {
		var d *Decision
		p, q := program(tt.rules, []any{}), program(tt.rules, []any{"increment_counter"})
		without := testing.AllocsPerRun(200, func() { d = p.Evaluate(rt, occ) })
		with := testing.AllocsPerRun(200, func() { d = q.Evaluate(rt, occ) })
		if d.Decision != "warn" || len(d.Counters) != tt.rules || d.Counters.Get("bench.pack/WARN_0").Fire < 1 {
			t.Fatalf("%d rules: decision %s, counters %+v", tt.rules, d.Decision, d.Counters)
		}
		t.Logf("%d rules: %.1f allocations per evaluation with counters, %.1f without", tt.rules, with, without)
		if with-without != tt.more {
			t.Errorf("%d rules counting: %.1f allocations per evaluation into a fresh buffer, %.1f without counters; want %.0f more", tt.rules, with, without, tt.more)
		}
	}
}

// warnProgram compiles rules warning at every tool call, bench.pack/WARN_0 and on, each
// with the member member set to v when member is not "", and no activity window, so
// that an evaluation allocates only for what the rules make.
func warnProgram(t testing.TB, rules int, member string, v any) *Program {
	docs := make([]any, rules)
	for i := range docs {
		doc := map[string]any{"oar": "1.0", "namespace": "bench.pack", "id": fmt.Sprintf("WARN_%d", i),
			"kind": "policy", "anchor": "tool.pre_invoke", "effect": "warn", "requires": map[string]any{"profiles": []any{"tool"}}}
		if member != "" {
			doc[member] = v
		}
		docs[i] = doc
	}
	p := programOf(t, benchCap(t), docs)
	p.cap.ActivityWindow = 0
	return p
}
