package bundle

import (
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// clauseID is the form of a clause identifier a diagnostic carries.
var clauseID = regexp.MustCompile(`^OAR-[A-Z]+-[0-9]+$`)

// FuzzLoad is the engine sidecar's reload of a bundle ConfigMap past its digest check,
// which FuzzDecode stops at (a mutated document almost never matches its digest): a
// capability, rules split into two packs at split, and configurations, each any JSON,
// make a bundle that is sealed, encoded, decoded and loaded as the sidecar installs it.
// It never panics; a refusal is a *LoadError whose every diagnostic names a clause and
// the pack or configuration it belongs to, with a rule index inside that pack; a bundle
// that loads evaluates an occurrence at every anchor it declares.
func FuzzLoad(f *testing.F) {
	b := sample(f)
	var rules []any
	for _, p := range b.Packs {
		rules = append(rules, p.Rules...)
	}
	var configs []any
	for _, c := range b.Configs {
		configs = append(configs, c.Document)
	}
	capDoc, ruleDocs, configDocs := canonicalOf(f, b.Capability), canonicalOf(f, rules), canonicalOf(f, configs)
	f.Add(capDoc, ruleDocs, configDocs, uint8(1))
	f.Add(capDoc, ruleDocs, []byte(`[{"oar_config":"1.0","disable":["beta.sec/WRITE"]},null]`), uint8(0))
	f.Add(capDoc, []byte(`[{"oar":"1.0","id":"A","kind":"policy","anchor":"gw.pre_call","effect":"block","overrides":["B"]},`+
		`{"oar":"1.0","id":"B","kind":"policy","anchor":"gw.render","effect":"warn","when":"oar.test.tier == \"free\""}]`), []byte(`[]`), uint8(2))
	f.Add([]byte(`null`), []byte(`[]`), []byte(`null`), uint8(0))
	f.Fuzz(func(t *testing.T, capability, ruleDocs, configDocs []byte, split uint8) {
		b, ok := bundleOf(capability, ruleDocs, configDocs, int(split))
		if !ok || b.Seal() != nil {
			return
		}
		enc, err := Encode(b)
		if err != nil {
			return
		}
		got, err := Decode(enc.Data, enc.BinaryData)
		if err != nil || got.Digest != b.Digest {
			t.Fatalf("a sealed bundle does not decode: %v", err)
		}
		l, err := Load(got)
		if err != nil {
			checkLoadError(t, got, err)
			return
		}
		evaluateEveryAnchor(t, l)
	})
}

// bundleOf makes a bundle of a capability document (an object or null), rules (a list,
// whose members split divides between packs "a" and "b") and configurations (a list
// of objects or nulls); ok is false when the JSON does not have that shape.
func bundleOf(capability, ruleDocs, configDocs []byte, split int) (b *Bundle, ok bool) {
	capDoc, err := engine.DecodeJSON(capability)
	if err != nil {
		return nil, false
	}
	rules, err := engine.DecodeJSON(ruleDocs)
	if err != nil {
		return nil, false
	}
	configs, err := engine.DecodeJSON(configDocs)
	if err != nil {
		return nil, false
	}
	b = &Bundle{}
	if b.Capability, err = objectOrNull(capDoc, "capability"); err != nil {
		return nil, false
	}
	list, err := listOrNull(rules, "rules")
	if err != nil {
		return nil, false
	}
	split = min(split, len(list))
	b.Packs = []Pack{{Name: "a", Generation: 1, Rules: list[:split]}, {Name: "b", Generation: 1, Rules: list[split:]}}
	docs, err := listOrNull(configs, "configs")
	if err != nil {
		return nil, false
	}
	for i, d := range docs {
		doc, err := objectOrNull(d, "document")
		if err != nil {
			return nil, false
		}
		b.Configs = append(b.Configs, Config{Name: fmt.Sprintf("c%d", i), Generation: 1, Order: int64(i), Document: doc})
	}
	return b, true
}

// canonicalOf is the JSON text of v, as a bundle holds it.
func canonicalOf(t testing.TB, v any) []byte {
	t.Helper()
	data, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkLoadError checks that err is a *LoadError whose diagnostics each name a clause
// and, past the capability stage, their owner: a pack holding the rule at Index, or a
// configuration of the bundle.
func checkLoadError(t *testing.T, b *Bundle, err error) {
	t.Helper()
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load's error is no *LoadError: %v", err)
	}
	if len(le.Errors) == 0 || len(le.Owners) != len(le.Errors) {
		t.Fatalf("%d diagnostics and %d owners: %v", len(le.Errors), len(le.Owners), err)
	}
	packs := map[string]int{}
	for _, p := range b.Packs {
		packs[p.Name] = max(packs[p.Name], len(p.Rules))
	}
	configs := map[string]bool{}
	for _, c := range b.Configs {
		configs[c.Name] = true
	}
	for i, e := range le.Errors {
		if !clauseID.MatchString(e.Clause) {
			t.Fatalf("diagnostic without a clause: %v", e)
		}
		owner := le.Owners[i]
		switch le.Stage {
		case StageRules:
			if (owner == "") != (e.Index < 0) {
				t.Fatalf("rule index %d with owner %q: %v", e.Index, owner, e)
			}
			if n, ok := packs[owner]; owner != "" && (!ok || e.Index >= n) {
				t.Fatalf("rule index %d outside pack %q of %d rules: %v", e.Index, owner, n, e)
			}
		case StageConfigs:
			if owner != "" && !configs[owner] {
				t.Fatalf("owner %q is no configuration of the bundle: %v", owner, e)
			}
		}
	}
}

// evaluateEveryAnchor evaluates an occurrence with content and a tool call at each
// anchor the loaded capability serves, and at one it does not declare.
func evaluateEveryAnchor(t *testing.T, l *Loaded) {
	t.Helper()
	if l.Program == nil || l.RuleSet == nil || len(l.RuleOwner) != ruleCount(l.Bundle) {
		t.Fatalf("a loaded bundle with program %v and %d rule owners", l.Program != nil, len(l.RuleOwner))
	}
	anchors := []string{"undeclared.anchor"}
	for _, core := range engine.CoreAnchors {
		if local, ok := l.Capability.LocalAnchor(core); ok {
			anchors = append(anchors, local)
		}
	}
	declared, _ := l.Capability.Document()["anchors"].(map[string]any)
	host, _ := declared["host"].([]any)
	for _, a := range host {
		if s, ok := a.(string); ok {
			anchors = append(anchors, s)
		}
	}
	rt := engine.NewMemoryRuntime()
	for _, anchor := range anchors {
		occ := &engine.Occurrence{Anchor: anchor, SessionID: "s", Content: "héllo", HasContent: true,
			ToolCall: &engine.ToolCall{Name: "read", Arguments: map[string]any{"path": "/x"}}}
		if d := l.Program.Evaluate(rt, occ); d == nil || d.Decision == "" {
			t.Fatalf("evaluate %s: no decision", anchor)
		}
	}
}

func ruleCount(b *Bundle) int {
	n := 0
	for _, p := range b.Packs {
		n += len(p.Rules)
	}
	return n
}
