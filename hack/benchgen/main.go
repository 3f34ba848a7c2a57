// Command benchgen writes a deterministic, realistic workload for `oarctl bench`
// (`make bench`, issue #14): a capability, rule packs and recorded occurrences whose
// shape follows real packs — anchors about 60 % tool.pre_invoke, 15 % tool.post_invoke,
// 15 % model.output and 10 % model.input; effects about a third block, a quarter warn,
// a fifth nudge, a fifth allow and a few redactions; selectors on tool-name lists;
// conditions over tool arguments, list facts and counters; copy with bindings and
// conditionals; on_fire counters and events; a few overrides and flows. The same seed
// always writes the same bytes, so only this recipe is committed, not its output.
//
//	go run ./hack/benchgen -seed 1 -rules 100 -out DIR
//	go run ./hack/benchgen -seed 1 -rules 100 -tenants 10 -out DIR   # 1,000 rules
//
// DIR receives capability.json, pack-NN.json (one rule pack per tenant, each under its
// own namespace) and occurrences.jsonl.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	seed := flag.Uint64("seed", 1, "the `seed` of the generator")
	rules := flag.Int("rules", 100, "the number of rules per tenant `pack`")
	tenants := flag.Int("tenants", 1, "the number of tenant packs; more than one adds a gw.tenant selector to every rule")
	occurrences := flag.Int("occurrences", 10000, "the number of recorded occurrences")
	sessions := flag.Int("sessions", 100, "the number of sessions the occurrences spread over")
	out := flag.String("out", "", "the output `directory` (created when missing; required)")
	flag.Parse()
	if *out == "" || *rules < 10 || *tenants < 1 || *occurrences < 1 || *sessions < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchgen -out DIR [-seed N] [-rules N>=10] [-tenants N] [-occurrences N] [-sessions N]")
		os.Exit(2)
	}
	if err := write(*out, *seed, *rules, *tenants, *occurrences, *sessions); err != nil {
		fmt.Fprintf(os.Stderr, "benchgen: %v\n", err)
		os.Exit(1)
	}
}

// docs are a generated workload: the capability, one rule pack per tenant, and the
// recorded occurrences.
type docs struct {
	capability  obj
	packs       [][]obj
	occurrences []obj
}

// generate builds the workload of the given size from seed. Each pack draws from its
// own stream, so adding tenants leaves the earlier packs unchanged.
func generate(seed uint64, rules, tenants, occurrences, sessions int) docs {
	d := docs{capability: capability()}
	for t := range tenants {
		g := &gen{r: rand.New(rand.NewPCG(seed, uint64(t)+1)), tenant: tenantName(t, tenants)}
		d.packs = append(d.packs, g.pack(rules))
	}
	g := &gen{r: rand.New(rand.NewPCG(seed, 0))}
	d.occurrences = g.occurrences(occurrences, sessions, tenants)
	return d
}

func write(dir string, seed uint64, rules, tenants, occurrences, sessions int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d := generate(seed, rules, tenants, occurrences, sessions)
	if err := writeJSON(filepath.Join(dir, "capability.json"), d.capability); err != nil {
		return err
	}
	for t, p := range d.packs {
		if err := writeJSON(filepath.Join(dir, fmt.Sprintf("pack-%02d.json", t)), p); err != nil {
			return err
		}
	}
	var b strings.Builder
	for _, o := range d.occurrences {
		line, err := json.Marshal(o)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return os.WriteFile(filepath.Join(dir, "occurrences.jsonl"), []byte(b.String()), 0o644)
}

func writeJSON(file string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

// tenantName is "" for a single pack (no tenant selector), else tenant-NN.
func tenantName(t, tenants int) string {
	if tenants == 1 {
		return ""
	}
	return fmt.Sprintf("tenant-%02d", t)
}

type obj = map[string]any

// capability declares the four anchors, the tool, session and content profiles, the
// detector profiles the detector rules need, and the host facts.
func capability() obj {
	return obj{
		"oar_capability_version": "1.0",
		"host":                   "gw",
		"anchors": obj{
			"core": obj{
				"tool.pre_invoke":  "tool.pre_invoke",
				"tool.post_invoke": "tool.post_invoke",
				"model.input":      "model.input",
				"model.output":     "model.output",
			},
			"unsupported": []string{"tool.handler", "agent.post_turn", "agent.finalize", "model.tool_result"},
		},
		"profiles":           []string{"tool", "session", "content", "pii", "secrets", "prompt-injection"},
		"detectors":          []string{"detector://fixture"},
		"activity_window":    8,
		"supports_transform": true,
		"host_facts": []obj{
			{"name": "gw.tenant", "type": "string"},
			{"name": "gw.region", "type": "string"},
		},
	}
}

// tools, most used first; an occurrence draws its tool with weight tools[i].w.
var tools = []struct {
	name string
	w    int
}{
	{"read", 20}, {"bash", 14}, {"edit", 12}, {"write", 10}, {"search", 8}, {"grep", 7},
	{"list_dir", 6}, {"fetch", 5}, {"git", 4}, {"http_post", 3}, {"db_query", 3},
	{"delete", 2}, {"move", 2}, {"send_email", 2}, {"deploy", 1}, {"kubectl", 1},
}

var (
	roles    = []string{"dev", "admin", "contractor", "sre", "auditor", "intern"}
	postures = []string{"standard", "strict", "relaxed"}
	regions  = []string{"eu-west", "us-east", "ap-south"}
)

type gen struct {
	r      *rand.Rand
	tenant string
	ids    map[string]bool
	// byAnchor lists the ids generated so far per anchor, for overrides and
	// fire_count_of.
	byAnchor map[string][]string
	// counted lists, per anchor, counting rules that fire_count_of may read.
	counted map[string][]string
}

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *gen) tool() string {
	total := 0
	for _, t := range tools {
		total += t.w
	}
	n := g.r.IntN(total)
	for _, t := range tools {
		if n < t.w {
			return t.name
		}
		n -= t.w
	}
	return tools[0].name
}

// toolList is a selector list of 2 to 4 distinct tools.
func (g *gen) toolList() []string {
	n := 2 + g.r.IntN(3)
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		t := g.tool()
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func (g *gen) id(prefix string) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s_%03d", prefix, g.r.IntN(1000))
		if !g.ids[id] {
			g.ids[id] = true
			return id
		}
	}
}

// effect draws an effect: a third block, a quarter warn, a fifth nudge, a fifth allow;
// transforms come from the redaction rules only.
func (g *gen) effect() string {
	switch n := g.r.IntN(60); {
	case n < 20:
		return "block"
	case n < 35:
		return "warn"
	case n < 47:
		return "nudge"
	default:
		return "allow"
	}
}

func (g *gen) kind() string {
	switch n := g.r.IntN(10); {
	case n < 6:
		return "policy"
	case n < 8:
		return "invariant"
	default:
		return "schema"
	}
}

// pack writes n rules for one tenant.
func (g *gen) pack(n int) []obj {
	g.ids, g.byAnchor, g.counted = map[string]bool{}, map[string][]string{}, map[string][]string{}
	var rules []obj
	// Anchors in the proportions, rounded; the remainder goes to tool.pre_invoke.
	post, output, input := n*15/100, n*15/100, n*10/100
	pre := n - post - output - input
	for range pre {
		rules = append(rules, g.toolRule("tool.pre_invoke"))
	}
	for range post {
		rules = append(rules, g.toolRule("tool.post_invoke"))
	}
	for i := range output {
		rules = append(rules, g.modelRule("model.output", i))
	}
	for i := range input {
		rules = append(rules, g.modelRule("model.input", i))
	}
	for _, r := range rules {
		if g.tenant != "" {
			r["namespace"] = g.tenant + ".bench"
			sel, _ := r["selector"].(obj)
			if sel == nil {
				sel = obj{}
				r["selector"] = sel
			}
			sel["gw.tenant"] = []string{g.tenant}
			req := r["requires"].(obj)
			facts, _ := req["facts"].([]string)
			req["facts"] = append(facts, "gw.tenant")
		} else {
			r["namespace"] = "acme.bench"
		}
	}
	return rules
}

func base(id, kind, anchor, effect string, profiles ...string) obj {
	return obj{
		"oar": "1.0", "id": id, "kind": kind, "anchor": anchor, "effect": effect,
		"requires": obj{"profiles": profiles},
	}
}

// condition is a when over tool observations with how often it holds: rare ones guard
// blocks, common ones warnings, nudges and allows.
type condition struct {
	when   string
	rare   bool
	counts bool // reads fire_count: the rule increments its own counter
}

var toolConditions = []condition{
	{when: `starts_with(tool_arg_string("path"), "/etc/")`, rare: true},
	{when: `contains(tool_arg_string("path"), "/.ssh/")`, rare: true},
	{when: `contains(tool_arg_string("command"), "rm -rf") && !("admin" in principal_roles)`, rare: true},
	{when: `tool_arg_string("mode") == "force" && session_posture == "strict"`, rare: true},
	{when: `tool_arg_int("limit") > 9500`, rare: true},
	{when: `"contractor" in principal_roles && starts_with(tool_arg_string("path"), "/srv/")`, rare: true},
	{when: `tool_arg_int("limit") > 6000`},
	{when: `"recursive" in tool_args && tool_arg_bool("recursive")`},
	{when: `size(tool_args) > 7`},
	{when: `"dev" in principal_roles && session_posture != "strict"`},
	{when: `tool_arg_int("timeout_ms") > 20000 || "headers" in tool_args`},
	{when: `ends_with(tool_arg_string("path"), ".env") || contains(tool_arg_string("path"), "secret")`},
	{when: `fire_count < 3`, counts: true},
	{when: `fire_count < 1000 && size(tool) > 0`, counts: true},
}

// copyFor writes copy with bindings and a conditional over the rule's facts.
func (g *gen) copyFor(anchor string) obj {
	if strings.HasPrefix(anchor, "tool.") {
		return obj{
			"what": "The call to {{ tool }} by {{ principal }} was flagged.",
			"fix":  "{% if session_posture %}Posture {{ session_posture }} applies; {% else %}No posture; {% endif %}ask an owner of {{ gw.region }}.",
		}
	}
	return obj{
		"what": "The {{ anchor }} content of {{ content_length }} code points was flagged for {{ principal }}.",
		"why":  "{% if not principal_roles %}No roles.{% else %}Roles: {{ principal_roles }}.{% endif %}",
	}
}

func (g *gen) toolRule(anchor string) obj {
	effect := g.effect()
	var c condition
	for {
		c = toolConditions[g.r.IntN(len(toolConditions))]
		if c.rare == (effect == "block") {
			break
		}
	}
	prefix := strings.ToUpper(strings.Split(anchor, ".")[1])
	r := base(g.id(prefix), g.kind(), anchor, effect, "tool", "session")
	r["requires"].(obj)["facts"] = []string{"gw.region"}
	selector := obj{"tool": g.toolList()}
	if g.r.IntN(12) == 0 {
		selector = obj{"principal_roles": []string{g.pick(roles), g.pick(roles)}}
	}
	r["selector"] = selector
	r["when"] = c.when
	r["copy"] = g.copyFor(anchor)
	var onFire []string
	switch n := g.r.IntN(10); {
	case c.counts || n < 2:
		onFire = append(onFire, "increment_counter")
		switch g.r.IntN(3) {
		case 0:
			r["counter_scope"] = "tool_args_fingerprint"
		case 1:
			r["counter_scope"] = "principal"
		}
		g.counted[anchor] = append(g.counted[anchor], r["id"].(string))
	case n < 4:
		onFire = append(onFire, "publish_event")
	}
	if len(onFire) > 0 {
		r["on_fire"] = onFire
	}
	// A burst limit over another rule's counter.
	if list := g.counted[anchor]; len(list) > 0 && !c.counts && g.r.IntN(8) == 0 {
		r["when"] = fmt.Sprintf(`fire_count_of(%q) > 40 && (%s)`, list[g.r.IntN(len(list))], c.when)
	}
	if effect != "block" && g.r.IntN(15) == 0 {
		r["flow"] = []string{g.tool(), g.tool()}
	}
	if list := g.byAnchor[anchor]; len(list) > 0 && effect == "allow" && g.r.IntN(4) == 0 {
		r["overrides"] = []string{list[g.r.IntN(len(list))]}
	}
	if g.r.IntN(20) == 0 {
		r["enforcement"] = "monitor"
	}
	if g.r.IntN(10) == 0 {
		r["on_error"] = "fail_open"
	}
	g.byAnchor[anchor] = append(g.byAnchor[anchor], r["id"].(string))
	return r
}

// modelRule writes a rule over content: the first two at model.output redact detector
// spans, the first at model.input is a prompt-injection detector, the rest look at
// content length, posture and roles.
func (g *gen) modelRule(anchor string, i int) obj {
	prefix := strings.ToUpper(strings.Split(anchor, ".")[1])
	switch {
	case anchor == "model.output" && i < 2:
		target, profile := "pii_entities", "pii"
		if i == 1 {
			target, profile = "secret_matches", "secrets"
		}
		r := base(g.id("REDACT"), "detector", anchor, "transform", profile, "content", "session")
		r["detector"] = obj{"ref": "detector://fixture"}
		r["when"] = fmt.Sprintf("size(%s) > 0", target)
		r["transform"] = obj{"action": "redact", "target": target}
		r["on_fire"] = []string{"publish_event"}
		r["copy"] = g.copyFor(anchor)
		return r
	case anchor == "model.input" && i == 0:
		r := base(g.id("INJECTION"), "detector", anchor, "block", "prompt-injection", "content", "session")
		r["detector"] = obj{"ref": "detector://fixture"}
		r["when"] = "prompt_injection_score > 0.9"
		r["on_fire"] = []string{"publish_event", "increment_counter"}
		r["copy"] = g.copyFor(anchor)
		return r
	}
	effect := g.effect()
	r := base(g.id(prefix), g.kind(), anchor, effect, "content", "session")
	switch {
	case effect == "block":
		r["when"] = fmt.Sprintf(`content_length > %d && session_posture == "strict"`, 1900+g.r.IntN(100))
	case g.r.IntN(2) == 0:
		r["when"] = fmt.Sprintf(`content_length > %d`, 800+g.r.IntN(1200))
	default:
		r["when"] = fmt.Sprintf(`%q in principal_roles || (content_length < %d && session_posture != "strict")`, g.pick(roles), 300+g.r.IntN(300))
	}
	if g.r.IntN(3) == 0 {
		r["selector"] = obj{"session_posture": []string{g.pick(postures), g.pick(postures)}}
	}
	r["copy"] = g.copyFor(anchor)
	if g.r.IntN(4) == 0 {
		r["on_fire"] = []string{"increment_counter"}
		r["counter_scope"] = "principal"
	}
	if list := g.byAnchor[anchor]; len(list) > 0 && effect == "allow" && g.r.IntN(3) == 0 {
		r["overrides"] = []string{list[g.r.IntN(len(list))]}
	}
	g.byAnchor[anchor] = append(g.byAnchor[anchor], r["id"].(string))
	return r
}

// session is what stays the same across a session's occurrences.
type session struct {
	id, tenant, principal, posture, region string
	roles                                  []string
}

func (g *gen) occurrences(n, sessions, tenants int) []obj {
	ss := make([]session, sessions)
	for i := range ss {
		ss[i] = session{
			id:        fmt.Sprintf("session-%03d", i),
			tenant:    tenantName(i%tenants, tenants),
			principal: fmt.Sprintf("user%02d@example.com", g.r.IntN(40)),
			posture:   g.pick(postures),
			region:    g.pick(regions),
			roles:     []string{g.pick(roles)},
		}
		if g.r.IntN(3) == 0 {
			ss[i].roles = append(ss[i].roles, g.pick(roles))
		}
	}
	out := make([]obj, n)
	for i := range out {
		s := ss[g.r.IntN(len(ss))]
		facts := obj{
			"principal": s.principal, "principal_roles": s.roles,
			"session_posture": s.posture, "gw.region": s.region,
		}
		if s.tenant != "" {
			facts["gw.tenant"] = s.tenant
		}
		o := obj{"session_id": s.id, "facts": facts}
		switch n := g.r.IntN(100); {
		case n < 50:
			o["anchor"] = "tool.pre_invoke"
			o["tool_call"] = obj{"name": g.tool(), "arguments": g.args()}
		case n < 70:
			o["anchor"] = "tool.post_invoke"
			o["tool_call"] = obj{"name": g.tool(), "arguments": g.args()}
		case n < 85:
			g.content(o, facts, "model.output")
		default:
			g.content(o, facts, "model.input")
		}
		out[i] = o
	}
	return out
}

var (
	dirs  = []string{"/workspace/src", "/workspace/docs", "/workspace/test", "/srv/data", "/tmp", "/etc", "/home/dev/.ssh", "/workspace/config"}
	files = []string{"main.go", "README.md", "app.env", "secret.yaml", "id_rsa", "data.csv", "notes.txt", "server.py"}
	cmds  = []string{"go test ./...", "ls -la", "git status", "rm -rf build", "make", "cat /etc/passwd", "npm install"}
	words = []string{"the", "model", "answer", "is", "based", "on", "retrieved", "context", "from", "files", "and", "tools", "which", "were", "called", "earlier", "données", "naïve", "résumé", "日本語"}
)

// args are a tool call's arguments: path and limit, then 1 to 8 more members, some of
// them nested maps and lists.
func (g *gen) args() obj {
	a := obj{
		"path":  g.pick(dirs) + "/" + g.pick(files),
		"limit": g.r.IntN(10000),
	}
	extra := []func(){
		func() { a["recursive"] = g.r.IntN(3) == 0 },
		func() { a["command"] = g.pick(cmds) },
		func() { a["mode"] = g.pick([]string{"append", "overwrite", "force", "dry-run"}) },
		func() { a["timeout_ms"] = 1000 * g.r.IntN(30) },
		func() {
			a["options"] = obj{"encoding": "utf-8", "follow_symlinks": g.r.IntN(2) == 0, "depth": g.r.IntN(5),
				"filters": obj{"include": []any{"*.go", "*.md"}, "exclude": []any{"vendor/"}}}
		},
		func() {
			a["headers"] = obj{"accept": "application/json", "x-request-id": fmt.Sprintf("req-%06d", g.r.IntN(1e6))}
		},
		func() { a["tags"] = []any{g.pick(words), g.pick(words), g.r.IntN(100)} },
		func() { a["query"] = g.pick(words) + " " + g.pick(words) },
	}
	for _, k := range g.r.Perm(len(extra))[:1+g.r.IntN(len(extra))] {
		extra[k]()
	}
	return a
}

// content fills a model occurrence: 200 to 2,000 code points of text, its length, and
// sometimes detector findings (spans in code points) for the fixture detector.
func (g *gen) content(o, facts obj, anchor string) {
	o["anchor"] = anchor
	want := 200 + g.r.IntN(1801)
	var b strings.Builder
	runes := 0
	for runes < want {
		w := g.pick(words)
		if runes > 0 {
			w = " " + w
		}
		b.WriteString(w)
		runes += len([]rune(w))
	}
	text := []rune(b.String())[:want]
	o["content"] = string(text)
	facts["content_length"] = want
	if g.r.IntN(5) != 0 {
		return
	}
	det := obj{}
	if anchor == "model.output" {
		var spans []obj
		for range 1 + g.r.IntN(4) {
			start := g.r.IntN(want - 20)
			spans = append(spans, obj{"start": start, "end": start + 5 + g.r.IntN(15)})
		}
		det["pii_entities"] = spans
		if g.r.IntN(3) == 0 {
			det["secret_matches"] = spans[:1]
		}
	} else {
		det["prompt_injection_score"] = float64(g.r.IntN(100)) / 100
	}
	o["detector_facts"] = det
}
