package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

var configMembers = setOf("oar_config", "disable", "enforcement")

// Configure applies operator configuration documents (section 9) to a loaded rule set,
// in the order given, the last statement about a rule winning ([OAR-CFG-7]), and
// returns the program that evaluates occurrences. Every error of every document is
// reported; any error refuses the configuration ([OAR-CONF-7]).
func Configure(rs *RuleSet, configs []any) (*Program, diag.List) {
	enforcement := make([]Enforcement, len(rs.Rules))
	for i, r := range rs.Rules {
		enforcement[i] = r.Enforcement
	}
	var all diag.List
	refs := &configResolver{rs: rs, work: suggestionWork}
	for i, doc := range configs {
		var l diag.List
		applyConfig(&l, refs, doc, enforcement)
		for _, e := range l {
			if e.Index < 0 {
				e.Index = i
			}
		}
		all = append(all, l...)
	}
	if len(all) > 0 {
		all.Sort()
		return nil, all
	}
	return newProgram(rs, enforcement), nil
}

// ConfigChecker reports the diagnostics Configure gives one configuration document
// against a rule set, without making a program: a document's diagnostics depend on the
// rule set and that document alone. It is for checking many documents one by one (bundle
// assembly), each check costing the document's size, not the rule set's. A checker is
// for one goroutine at a time.
type ConfigChecker struct {
	refs configResolver
}

// NewConfigChecker returns a checker of configuration documents against rs.
func NewConfigChecker(rs *RuleSet) *ConfigChecker {
	return &ConfigChecker{refs: configResolver{rs: rs}}
}

// Errors returns what Configure(rs, []any{doc}) reports, sorted, each with Index 0.
func (c *ConfigChecker) Errors(doc any) diag.List {
	c.refs.work = suggestionWork
	var l diag.List
	applyConfig(&l, &c.refs, doc, nil)
	for _, e := range l {
		if e.Index < 0 {
			e.Index = 0
		}
	}
	l.Sort()
	return l
}

// Applies says whether doc applies: whether Errors would report nothing. It skips what
// only the diagnostics' text needs (an ambiguous identifier's matches listed in order, a
// suggestion for an unknown one), which costs the size of the rule set.
func (c *ConfigChecker) Applies(doc any) bool {
	c.refs.quiet = true
	defer func() { c.refs.quiet = false }()
	var l diag.List
	applyConfig(&l, &c.refs, doc, nil)
	return len(l) == 0
}

// applyConfig validates one configuration document ([OAR-CFG-1]) and applies it to
// enforcement, which it changes only when the document is valid (nil: only validates).
func applyConfig(l *diag.List, refs *configResolver, doc any, enforcement []Enforcement) {
	rs := refs.rs
	obj, ok := doc.(map[string]any)
	if !ok {
		l.Add(fieldErr("OAR-CFG-1", "", doc, "a configuration document must be a JSON object; got %s", types.DescribeJSON(doc)))
		return
	}
	before := len(*l)
	if !checkVersion(l, obj, "oar_config") {
		// The configuration's own clause governs its version, applying the rules
		// [OAR-DOC-3], [OAR-DOC-4] and [OAR-DOC-5] set for oar.
		for _, e := range (*l)[before:] {
			e.Message += fmt.Sprintf(" (as [%s] requires of oar)", e.Clause)
			e.Clause = "OAR-CFG-1"
		}
		return
	}
	checkClosed(l, obj, configMembers, "", "OAR-CFG-1", "a configuration document (members are oar_config, disable, enforcement)", false)
	type statement struct {
		rule  int
		level Enforcement
		field string
		ref   string
	}
	var stmts []statement
	if raw, present := obj["enforcement"]; present {
		m, isObj := raw.(map[string]any)
		if !isObj {
			l.Add(fieldErr("OAR-CFG-3", "enforcement", raw, "enforcement must be an object mapping rule identifiers to enforce, monitor or off; got %s", types.DescribeJSON(raw)))
		} else {
			said := map[int]Enforcement{}
			for _, ref := range sortedKeys(m) {
				path := "enforcement." + ref
				s, isStr := m[ref].(string)
				level, known := enforcementLevel(s)
				if !isStr || !known {
					l.Add(fieldErr("OAR-CFG-3", path, m[ref], "enforcement for %q must be one of enforce, monitor, off%s", ref, enumHint(m[ref], isStr)))
					continue
				}
				i, ok := refs.resolve(l, ref, path)
				if !ok {
					continue
				}
				if prev, dup := said[i]; dup && prev != level {
					l.Add(fieldErr("OAR-CFG-7", path, ref, "enforcement names rule %s twice with different levels", rs.Rules[i].QID))
					continue
				}
				said[i] = level
				stmts = append(stmts, statement{rule: i, level: level, field: path, ref: ref})
			}
		}
	}
	if list, ok := getStringList(l, obj, "disable", "disable", "OAR-CFG-2"); ok {
		for j, ref := range list {
			path := fmt.Sprintf("disable[%d]", j)
			if i, ok := refs.resolve(l, ref, path); ok {
				stmts = append(stmts, statement{rule: i, level: EnforceOff, field: path, ref: ref})
			}
		}
	}
	for _, s := range stmts {
		r := rs.Rules[s.rule]
		if !r.Mandatory {
			continue
		}
		switch {
		case strings.HasPrefix(s.field, "disable"):
			e := fieldErr("OAR-CFG-5", s.field, s.ref, "configuration disables %s, a mandatory rule ([OAR-OPS-7])", r.QID)
			e.Rule = r.QID
			l.Add(e)
		case s.level < r.Enforcement:
			e := fieldErr("OAR-CFG-5", s.field, s.ref, "configuration downgrades %s, a mandatory rule, from %s to %s ([OAR-OPS-7])", r.QID, r.Enforcement, s.level)
			e.Rule = r.QID
			l.Add(e)
		}
	}
	if len(*l) > before || enforcement == nil {
		return
	}
	for _, s := range stmts {
		enforcement[s.rule] = s.level
	}
}

func enforcementLevel(s string) (Enforcement, bool) {
	for i, n := range enforcementNames {
		if n == s {
			return Enforcement(i), true
		}
	}
	return 0, false
}

func enumHint(v any, isStr bool) string {
	if isStr {
		return fmt.Sprintf("; got %q", v)
	}
	return yamlHint(v)
}

// configResolver resolves the rule identifiers of the configuration documents of one
// Configure call.
type configResolver struct {
	rs *RuleSet
	// byID is the loaded rules by bare id, in set order, made at the first bare
	// identifier that is not a qualified one: a document may name every rule of a large
	// set, and finding each by going through the set cost the square of its size.
	byID map[string][]*Rule
	// work is what is left for "did you mean" (suggestionWork).
	work int
	// quiet says only whether an identifier resolves matters, not why it does not.
	quiet bool
}

// resolve resolves a rule identifier in a configuration document: an exact
// qualified-identifier match first, then — for a bare id only — every loaded rule with
// that id, refusing an ambiguous one ([OAR-CFG-8]) and one naming nothing ([OAR-CFG-4]).
func (c *configResolver) resolve(l *diag.List, ref, path string) (int, bool) {
	rs := c.rs
	if r, ok := rs.Rule(ref); ok {
		return r.Index, true
	}
	if !strings.Contains(ref, "/") {
		if c.byID == nil {
			c.byID = make(map[string][]*Rule, len(rs.Rules))
			for _, r := range rs.Rules {
				c.byID[r.ID] = append(c.byID[r.ID], r)
			}
		}
		matches := c.byID[ref]
		switch len(matches) {
		case 1:
			return matches[0].Index, true
		case 0:
		default:
			if c.quiet {
				l.Add(fieldErr("OAR-CFG-8", path, ref, "bare identifier %q is ambiguous", ref))
				return 0, false
			}
			names := make([]string, len(matches))
			for i, r := range matches {
				names[i] = r.QID
			}
			sort.Strings(names)
			e := l.Add(fieldErr("OAR-CFG-8", path, ref, "bare identifier %q is ambiguous: it matches %s; use the qualified identifier", ref, strings.Join(names, ", ")))
			e.Related = names
			return 0, false
		}
	}
	e := fieldErr("OAR-CFG-4", path, ref, "configuration names rule %q, which is not loaded", ref)
	if !c.quiet {
		e.SuggestWithin(ref, rs.configRefs(ref), &c.work)
	}
	e.Rule = ref
	l.Add(e)
	return 0, false
}
