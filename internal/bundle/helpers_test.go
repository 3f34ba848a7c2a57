package bundle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

const testCapability = `{"oar_capability_version":"1.0","host":"oar.test",
 "anchors":{"core":{"tool.pre_invoke":"gw.pre_call","model.output":"model.output"},
  "unsupported":["tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.tool_result"],
  "host":["gw.render"]},
 "profiles":["tool","session","content"],"activity_window":8,"supports_transform":true,"expression_nodes_max":1024,
 "host_facts":[{"name":"oar.test.tier","type":"string"}]}`

// epoch orders creation times in tests: at(n) is n minutes after it.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(n int) time.Time { return epoch.Add(time.Duration(n) * time.Minute) }

// decode reads JSON the way the controller hands documents over: exact numbers.
func decode(t testing.TB, src string) any {
	t.Helper()
	v, err := engine.DecodeJSON([]byte(src))
	if err != nil {
		t.Fatalf("decoding %s: %v", src, err)
	}
	return v
}

func capability(t testing.TB) map[string]any {
	return decode(t, testCapability).(map[string]any)
}

// rule is a valid rule document; extra members are JSON object members to add or
// replace, e.g. `"overrides":["a/B"]`.
func rule(t testing.TB, ns, id string, extra ...string) any {
	t.Helper()
	members := map[string]string{
		"oar": `"1.0"`, "namespace": fmt.Sprintf("%q", ns), "id": fmt.Sprintf("%q", id),
		"kind": `"policy"`, "anchor": `"tool.pre_invoke"`, "effect": `"warn"`,
	}
	order := []string{"oar", "namespace", "id", "kind", "anchor", "effect"}
	for _, e := range extra {
		k, v, _ := strings.Cut(e, ":")
		k = strings.Trim(k, `"`)
		if _, ok := members[k]; !ok {
			order = append(order, k)
		}
		members[k] = v
	}
	var b strings.Builder
	b.WriteString("{")
	for i, k := range order {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%s", k, members[k])
	}
	b.WriteString("}")
	return decode(t, b.String())
}

func config(t testing.TB, src string) map[string]any {
	return decode(t, src).(map[string]any)
}

func pack(name string, gen int64, created int, rules ...any) PackInput {
	return PackInput{Name: name, Generation: gen, CreationTime: at(created), Rules: rules}
}

func mustAssemble(t testing.TB, in Input) *Result {
	t.Helper()
	res, err := Assemble(in)
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	return res
}

// published lists the bundle's packs as name@generation.
func published(b *Bundle) []string {
	if b == nil {
		return nil
	}
	var out []string
	for _, p := range b.Packs {
		out = append(out, fmt.Sprintf("%s@%d", p.Name, p.Generation))
	}
	return out
}

func publishedConfigs(b *Bundle) []string {
	var out []string
	for _, c := range b.Configs {
		out = append(out, fmt.Sprintf("%s@%d", c.Name, c.Generation))
	}
	return out
}

func hasDiag(l diag.List, clause, field string) bool {
	for _, e := range l {
		if e.Clause == clause && (field == "" || e.Field == field) {
			return true
		}
	}
	return false
}

// benchPacks builds n packs of perPack realistic rules each: a selector, a condition
// of about twenty nodes, counters and copy with a binding, every pack in its own
// namespace.
func benchPacks(t testing.TB, n, perPack int) []PackInput {
	packs := make([]PackInput, n)
	for p := range packs {
		rules := make([]any, perPack)
		for i := range rules {
			rules[i] = benchRule(t, p, i)
		}
		packs[p] = PackInput{Name: fmt.Sprintf("pack-%03d", p), Generation: 1, CreationTime: at(p), Rules: rules}
	}
	return packs
}

func benchRule(t testing.TB, p, i int) any {
	return decode(t, fmt.Sprintf(`{"oar":"1.0","namespace":"bench.pack-%03d","id":"RULE_%04d",
	 "kind":%q,"anchor":"tool.pre_invoke","selector":{"tool":["tool_%d"]},
	 "requires":{"profiles":["tool","session"]},
	 "when":"tool_arg_int(\"size\") > %d && (starts_with(tool_arg_string(\"path\"), \"/etc\") || \"admin\" in principal_roles) && fire_count < 5",
	 "effect":%q,"on_fire":["increment_counter"],
	 "copy":{"what":"{{ tool }} touched a protected path in pack %d","fix":"{%% if principal %%}Ask {{ principal }}{%% else %%}Ask an owner{%% endif %%}."}}`,
		p, i, []string{"schema", "policy", "invariant"}[i%3], i%7, i, []string{"warn", "nudge", "allow"}[i%3], p))
}

// refusalChain is n new packs, pack k's one rule overriding pack k+1's, the last one's
// overriding a rule no pack defines: a chain of references each pack is refused by
// only once the pack it names is.
func refusalChain(t testing.TB, n int) []PackInput {
	packs := make([]PackInput, n)
	for k := range packs {
		target := fmt.Sprintf("c%d.sec/R", k+1)
		if k == n-1 {
			target = "nope.sec/X"
		}
		packs[k] = PackInput{Name: fmt.Sprintf("c%03d", k), Generation: 1, CreationTime: at(k), Rules: []any{decode(t, fmt.Sprintf(
			`{"oar":"1.0","namespace":"c%d.sec","id":"R","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","overrides":[%q]}`, k, target))}}
	}
	return packs
}

// gonePackConfigs returns the published state of pack gone, rules G0…Gn-1, and n
// configurations, configuration k enforcing gone.sec/Gk; and n one-rule newcomers,
// none defining a rule a configuration names.
func gonePackConfigs(t testing.TB, n int) (Input, []PackInput) {
	t.Helper()
	in := packWithConfigs(t, "gone", n, "G%d", `{"oar_config":"1.0","enforcement":{"gone.sec/G%d":"enforce"}}`)
	newcomers := make([]PackInput, n)
	for k := range newcomers {
		newcomers[k] = pack(fmt.Sprintf("new-%03d", k), 1, n+k, rule(t, fmt.Sprintf("q%d.sec", k), "N"))
	}
	return in, newcomers
}

// ambiguousConfigs returns the published state of pack base, rules X0…Xn-1, and n
// configurations, configuration k enforcing Xk by its bare id; and n newcomers,
// newcomer k defining a rule Xk of its own.
func ambiguousConfigs(t testing.TB, n int) (Input, []PackInput) {
	t.Helper()
	in := packWithConfigs(t, "base", n, "X%d", `{"oar_config":"1.0","enforcement":{"X%d":"enforce"}}`)
	newcomers := make([]PackInput, n)
	for k := range newcomers {
		newcomers[k] = pack(fmt.Sprintf("new-%03d", k), 1, n+k, rule(t, fmt.Sprintf("q%d.sec", k), fmt.Sprintf("X%d", k)))
	}
	return in, newcomers
}

// packWithConfigs returns the input in which pack name (namespace name.sec) holds n
// rules, ids idFormat of 0…n-1, and n configurations, configuration k's document
// cfgFormat of k, published as Current.
func packWithConfigs(t testing.TB, name string, n int, idFormat, cfgFormat string) Input {
	t.Helper()
	var rules []any
	for k := range n {
		rules = append(rules, rule(t, name+".sec", fmt.Sprintf(idFormat, k)))
	}
	in := Input{Capability: capability(t), Packs: []PackInput{pack(name, 1, 0, rules...)}}
	for k := range n {
		in.Configs = append(in.Configs, ConfigInput{Name: fmt.Sprintf("cfg-%03d", k), Generation: 1, Order: int64(k), CreationTime: at(k),
			Document: config(t, fmt.Sprintf(cfgFormat, k))})
	}
	in.Current = mustAssemble(t, in).Bundle
	if len(in.Current.Configs) != n {
		t.Fatalf("published %d configurations", len(in.Current.Configs))
	}
	return in
}
