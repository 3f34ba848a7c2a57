package engine

import (
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oar-operator/oar-operator/internal/engine/copytext"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/expr"
	"github.com/oar-operator/oar-operator/internal/engine/transform"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// RuleSet is a loaded rule set ([OAR-DOC-31]) compiled against one capability.
type RuleSet struct {
	Capability *Capability
	// Rules in the order they were given; the order carries no meaning ([OAR-DOC-31]).
	Rules []*Rule
	// Warnings are load-time advice that does not refuse the set ([OAR-SEL-6]).
	Warnings diag.List

	byQID map[string]int
	// calls is the number of slots the set's conditions gave calls of an observation
	// function with a literal argument (compileCache.callSlot): an evaluation keeps the
	// result of each there for the occurrence.
	calls int
	// compiled keeps, while the set loads, the conditions and copy templates compiled
	// without error, so a source repeated across rules (tenant packs share their copy
	// and many conditions) compiles once. Both are immutable once compiled.
	compiled *compileCache
}

type compileCache struct {
	// when is keyed by namespace and source: a bare rule reference in
	// fire_count_of resolves in the rule's own namespace ([OAR-FIRE-11]).
	when map[[2]string]*condition
	copy map[string]*template
	// checkOnly leaves conditions unbuilt (CheckRules), and kept keeps them across
	// sets when not nil.
	checkOnly bool
	kept      ConditionStore
	// sealed is set once every source of the set was compiled: the rules are then
	// resolved concurrently, and the cache is only read.
	sealed bool
	// calls numbers each distinct function and literal argument the set's conditions
	// call, across conditions, which compile concurrently: callsMu guards it.
	callsMu sync.Mutex
	calls   map[callKey]int
}

// callKey is an observation function and the literal it is applied to: the literal's
// type, its text when a string and its bits otherwise (types.Value.Int). It holds no
// interface, so that a key hashes as its fields.
type callKey struct {
	fn   int
	kind types.Kind
	bits int64
	str  string
}

// callSlot is expr.Options.CallSlot for the set's conditions: one slot for every call
// of fn with arg, whichever condition makes it.
func (cc *compileCache) callSlot(fn types.Symbol, arg types.Value) int {
	k := callKey{fn: fn.ID, kind: arg.Kind, bits: arg.Int(), str: arg.Str()}
	cc.callsMu.Lock()
	defer cc.callsMu.Unlock()
	slot, ok := cc.calls[k]
	if !ok {
		slot = len(cc.calls)
		cc.calls[k] = slot
	}
	return slot
}

var ruleMembers = setOf("oar", "id", "namespace", "kind", "anchor", "selector", "when", "flow", "effect",
	"enforcement", "mandatory", "on_error", "on_fire", "overrides", "requires", "transform", "detector",
	"copy", "references", "status", "related", "counter_scope")

// LoadRules validates and compiles every member of a rule set against c, collecting
// every error of every member ([OAR-CONF-1]). The set loads only when no member is
// refused; a refused set returns a nil RuleSet.
func LoadRules(c *Capability, docs []any) (*RuleSet, diag.List) {
	return loadRules(c, docs, false, nil)
}

// CheckRules validates every member of a rule set against c as LoadRules does, with the
// same diagnostics, without building the conditions' evaluators: for a caller that only
// asks whether the set loads.
func CheckRules(c *Capability, docs []any) diag.List {
	_, errs := CheckRulesKept(c, docs, nil)
	return errs
}

// ConditionStore keeps, from one check of a rule set to the next, what checking a
// condition found where that depends on nothing but the condition's source and the
// capability: the condition type-checks and names no rule. A store must only be used
// with capabilities loaded from the same document, and concurrently.
type ConditionStore interface {
	// Checked returns the facts and functions the condition src references, if kept.
	Checked(src string) (refs []types.Symbol, ok bool)
	// KeepChecked keeps them; refs is not modified afterwards.
	KeepChecked(src string, refs []types.Symbol)
}

// CheckRulesKept is CheckRules taking the conditions kept in store, when not nil, and
// keeping there those it checks. When the set loads, it also returns the load warnings
// LoadRules would give (RuleSet.Warnings), so a checker says what the loader says.
func CheckRulesKept(c *Capability, docs []any, store ConditionStore) (warnings, errs diag.List) {
	rs, errs := loadRules(c, docs, true, store)
	if rs == nil {
		return nil, errs
	}
	return rs.Warnings, nil
}

// loadRules is LoadRules; checkOnly leaves every rule's condition unbuilt, so the set it
// returns is not to be run, and then store, when not nil, keeps conditions across sets.
func loadRules(c *Capability, docs []any, checkOnly bool, store ConditionStore) (*RuleSet, diag.List) {
	rs := &RuleSet{Capability: c, byQID: make(map[string]int, len(docs)),
		compiled: &compileCache{when: make(map[[2]string]*condition, len(docs)), copy: map[string]*template{}, checkOnly: checkOnly, kept: store, calls: map[callKey]int{}}}
	defer func() { rs.compiled = nil }()
	var all diag.List
	// Pass 1: each member on its own terms ([OAR-DOC-31]), on every processor; the
	// results are then taken in member order, as one processor would. A set only
	// checked is dropped once checked: its rules come from scratch used again.
	s := scratches.Get().(*loadScratch)
	defer scratches.Put(s)
	members := s.membersFor(len(docs))
	var slab []Rule
	if checkOnly {
		slab = s.rulesFor(len(docs))
	}
	forEach(len(docs), func(i int) {
		m := &members[i]
		var at *Rule
		if slab != nil {
			at = &slab[i]
		}
		m.l = nil
		m.r, m.req, m.ok = parseRule(&m.l, i, docs[i], at)
	})
	shaped := make([]*loadMember, 0, len(docs))
	for i := range members {
		m := &members[i]
		if r := m.r; r != nil && r.QID != "" {
			if prev, dup := rs.byQID[r.QID]; dup {
				m.l.Add(fieldErr("OAR-DOC-9", "id", r.ID, "rule set contains two rules with qualified identifier %s (the other is member %d)", r.QID, prev))
			} else {
				rs.byQID[r.QID] = i
			}
		}
		all = append(all, m.l.WithContext(i, ruleName(m.r))...)
		if m.ok {
			shaped = append(shaped, m)
		}
		if m.r != nil {
			rs.Rules = append(rs.Rules, m.r)
		}
	}
	// Pass 2: against the capability and the set. The conditions and copy templates are
	// compiled first, each distinct source once, on every processor; then each rule is
	// resolved, also on every processor, into its own diagnostics and warnings, which are
	// taken in member order.
	byIndex := s.byIndexFor(len(docs))
	for _, m := range shaped {
		byIndex[m.r.Index] = m.r
	}
	rs.precompile(func(yield func(*Rule, requirements) bool) {
		for _, m := range shaped {
			if !yield(m.r, m.req) {
				return
			}
		}
	})
	resolved := s.resolvedFor(len(shaped))
	forEach(len(shaped), func(i int) {
		resolved[i] = resolvedRule{}
		rs.resolveRule(&resolved[i].l, &resolved[i].warnings, &resolved[i].owed, shaped[i].r, shaped[i].req, byIndex)
	})
	work := suggestionWork
	for i, m := range shaped {
		rs.suggestRefs(&work, resolved[i].owed)
		all = append(all, resolved[i].l.WithContext(m.r.Index, m.r.QID)...)
		rs.Warnings = append(rs.Warnings, resolved[i].warnings...)
	}
	if len(all) == 0 {
		all = append(all, rs.checkCycles(byIndex)...)
	}
	if len(all) > 0 {
		all.Sort()
		return nil, all
	}
	rs.Warnings.Sort()
	rs.calls = len(rs.compiled.calls)
	return rs, nil
}

// loadMember is one member of a set under load after pass 1.
type loadMember struct {
	r   *Rule
	req requirements
	ok  bool
	l   diag.List
}

// resolvedRule is what pass 2 says of one well-formed rule.
type resolvedRule struct {
	l, warnings diag.List
	owed        []owedSuggestion
}

// loadScratch is the room a set needs only while it loads, used again by the next set
// loaded: what a set of a thousand rules would otherwise allocate each time. What it
// holds from the last set is overwritten before it is read.
type loadScratch struct {
	members  []loadMember
	resolved []resolvedRule
	// rules are the rules of a set only checked (CheckRules), which is dropped once
	// checked.
	rules []Rule
	// byIndex holds each well-formed rule at its member index, nil at the others'.
	byIndex []*Rule
}

var scratches = sync.Pool{New: func() any { return new(loadScratch) }}

func (s *loadScratch) membersFor(n int) []loadMember {
	if cap(s.members) < n {
		s.members = make([]loadMember, n)
	}
	return s.members[:n]
}

func (s *loadScratch) resolvedFor(n int) []resolvedRule {
	if cap(s.resolved) < n {
		s.resolved = make([]resolvedRule, n)
	}
	return s.resolved[:n]
}

func (s *loadScratch) byIndexFor(n int) []*Rule {
	if cap(s.byIndex) < n {
		s.byIndex = make([]*Rule, n)
	}
	clear(s.byIndex[:n])
	return s.byIndex[:n]
}

func (s *loadScratch) rulesFor(n int) []Rule {
	if cap(s.rules) < n {
		s.rules = make([]Rule, n)
	}
	return s.rules[:n]
}

// rulesPerWorker is the fewest members worth a goroutine of their own while a set
// loads; smaller sets load on the calling goroutine.
var rulesPerWorker = 64

// forEach calls f for every index below n, spread over the processors when n is large
// enough. f must touch only what belongs to its index.
func forEach(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/rulesPerWorker)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	// Indices are handed out in small chunks, so a worker slowed by another process on
	// its processor holds back little.
	const chunk = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				end := int(next.Add(chunk))
				start := end - chunk
				if start >= n {
					return
				}
				for i := start; i < min(end, n); i++ {
					f(i)
				}
			}
		})
	}
	wg.Wait()
}

func ruleName(r *Rule) string {
	if r == nil {
		return ""
	}
	return r.QID
}

// Rule returns the rule with the given qualified identifier.
func (rs *RuleSet) Rule(qid string) (*Rule, bool) {
	i, ok := rs.byQID[qid]
	if !ok {
		return nil, false
	}
	return rs.Rules[i], true
}

// requirements is a rule's requires object ([OAR-DOC-21]).
type requirements struct {
	// the lists as decoded, every member a string, in order; a rule names few, so they
	// are searched rather than indexed
	profileList, factList []any
	// unresolved references, resolved in pass 2
	onError   string
	overrides []string
	when      string
	hasWhen   bool
	// copy holds each member of copyMemberNames present, at its position there
	copy     [len(copyMemberNames)]copySource
	counter  string
	hasCount bool
	// selector holds the well-formed clauses, sorted by fact
	selector []selectorSource
	target   string
}

// copySource is a copy member's template as written.
type copySource struct {
	src     string
	present bool
}

// selectorSource is a selector clause as written: values are its list, every one a
// string.
type selectorSource struct {
	fact   string
	values []any
}

// reaches reports whether requires names profile, or the fact name itself.
func (req *requirements) reaches(profile, name string) bool {
	return slices.Contains(req.profileList, any(profile)) || req.names(name)
}

// names reports whether requires.facts names the fact name.
func (req *requirements) names(name string) bool { return slices.Contains(req.factList, any(name)) }

// Member sets and paths the loader checks every rule against, built once.
var (
	requiresMembers = setOf("profiles", "facts")
	copyMembers     = setOf(copyMemberNames[:]...)
	copyPaths       = func() (paths [len(copyMemberNames)]string) {
		for i, name := range copyMemberNames {
			paths[i] = "copy." + name
		}
		return paths
	}()
)

// parseRule checks one member's shape: the version gate first ([OAR-CONF-2]), then the
// closed field set and every field's type and grammar. ok reports whether the member is
// well-formed enough for pass 2. The rule is made at at, or allocated when at is nil.
func parseRule(l *diag.List, index int, doc any, at *Rule) (*Rule, requirements, bool) {
	var req requirements
	obj, isObj := doc.(map[string]any)
	if !isObj {
		l.Add(fieldErr("OAR-DOC-31", "", doc, "member %d of the rule set is not a rule document: a rule document is a JSON object; got %s", index, types.DescribeJSON(doc)))
		return nil, req, false
	}
	before := len(*l)
	if !checkVersion(l, obj, "oar") {
		return nil, req, false
	}
	if at == nil {
		at = new(Rule)
	}
	r := at
	*r = Rule{Index: index, doc: obj, OnErrorRule: -1, Enforcement: EnforceOn}
	checkClosed(l, obj, ruleMembers, "", "OAR-DOC-27", "a rule document", true)
	for _, f := range []string{"id", "kind", "anchor", "effect"} {
		if _, ok := obj[f]; !ok {
			l.Add(fieldErr("OAR-DOC-2", f, nil, "missing required member %q", f))
		}
	}
	if id, ok := getString(l, obj, "id", "id", "OAR-DOC-6"); ok {
		if isID(id) {
			r.ID = id
		} else {
			l.Add(fieldErr("OAR-DOC-6", "id", id, "id %q must match ^[A-Z][A-Z0-9_]*$", id))
		}
	}
	if ns, ok := getString(l, obj, "namespace", "namespace", "OAR-DOC-7"); ok {
		if isNamespace(ns) {
			r.Namespace = ns
		} else {
			l.Add(fieldErr("OAR-DOC-7", "namespace", ns, "namespace %q must match ^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$", ns))
		}
	}
	if r.ID != "" && (r.Namespace != "" || obj["namespace"] == nil) {
		r.QID = qualify(r.Namespace, r.ID)
	}
	if k, ok := getEnum(l, obj, "kind", "OAR-DOC-10", kindNames); ok {
		r.Kind = Kind(k)
	}
	if e, ok := getEnum(l, obj, "effect", "OAR-DOC-11", effectNames[1:]); ok {
		r.Effect = Effect(e + 1)
	}
	if a, ok := getString(l, obj, "anchor", "anchor", "OAR-DOC-12"); ok {
		if a == "" {
			l.Add(fieldErr("OAR-DOC-12", "anchor", a, "anchor must name a lifecycle moment; it is empty"))
		}
		r.Anchor = a
	}
	if e, ok := getEnum(l, obj, "enforcement", "OAR-DOC-16", enforcementNames); ok {
		r.Enforcement = Enforcement(e)
	}
	if m, ok := getBool(l, obj, "mandatory", "mandatory", "OAR-DOC-17"); ok {
		r.Mandatory = m
	}
	// status records the author's confidence and affects no decision ([OAR-DOC-29]).
	getEnum(l, obj, "status", "OAR-DOC-29", []string{"experimental", "test", "stable", "deprecated"})
	if w, ok := getString(l, obj, "when", "when", "OAR-DOC-14"); ok {
		req.when, req.hasWhen = w, true
	}
	parseFlow(l, obj, r)
	parseOnError(l, obj, r, &req)
	parseOnFire(l, obj, r)
	if list, ok := getStringList(l, obj, "overrides", "overrides", "OAR-DOC-20"); ok {
		for i, ref := range list {
			if !validRuleRef(ref) {
				l.Add(fieldErr("OAR-DOC-20", fmt.Sprintf("overrides[%d]", i), ref, "overrides entry %q is neither a bare id nor a qualified <namespace>/<id>", ref))
				continue
			}
			req.overrides = append(req.overrides, ref)
		}
	}
	parseRequires(l, obj, &req)
	parseSelector(l, obj, &req)
	parseTransform(l, obj, r, &req)
	parseDetector(l, obj, r)
	parseCopy(l, obj, &req)
	// references are taxonomy tags and affect no decision ([OAR-DOC-25]).
	getObject(l, obj, "references", "references", "OAR-DOC-25")
	parseRelated(l, obj)
	if cs, ok := getString(l, obj, "counter_scope", "counter_scope", "OAR-DOC-32"); ok {
		req.counter, req.hasCount = cs, true
	}
	return r, req, len(*l) == before && r.QID != ""
}

// QualifiedID returns a rule document's qualified identifier ([OAR-DOC-8]) as the
// loader derives it, or false when its id or namespace is malformed.
func QualifiedID(doc any) (string, bool) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return "", false
	}
	id, ok := obj["id"].(string)
	if !ok || !isID(id) {
		return "", false
	}
	raw, present := obj["namespace"]
	if !present {
		return id, true
	}
	ns, ok := raw.(string)
	if !ok || !isNamespace(ns) {
		return "", false
	}
	return qualify(ns, id), true
}

// ResolveRef is the qualified identifier a rule reference names when written in a rule
// of namespace ns: a qualified identifier as is, a bare id within ns ([OAR-EVAL-13],
// [OAR-OPS-5], [OAR-FIRE-11]).
func ResolveRef(ref, ns string) string {
	if strings.Contains(ref, "/") {
		return ref
	}
	return qualify(ns, ref)
}

func qualify(ns, id string) string {
	if ns == "" {
		return id
	}
	return ns + "/" + id
}

// getEnum reads a string member that must be one of names, returning its index.
func getEnum(l *diag.List, obj map[string]any, field, clause string, names []string) (int, bool) {
	s, ok := getString(l, obj, field, field, clause)
	if !ok {
		return 0, false
	}
	for i, n := range names {
		if n == s {
			return i, true
		}
	}
	l.Add(fieldErr(clause, field, s, "%s %q must be one of %s", field, s, strings.Join(names, ", "))).Suggest(s, slices.Values(names))
	return 0, false
}

func parseFlow(l *diag.List, obj map[string]any, r *Rule) {
	list, ok := getStringList(l, obj, "flow", "flow", "OAR-DOC-15")
	if !ok {
		return
	}
	if len(list) == 0 {
		l.Add(fieldErr("OAR-DOC-15", "flow", []any{}, "flow must be non-empty when present: an empty flow has two defensible readings and does not load"))
		return
	}
	for i, s := range list {
		if s == "" {
			l.Add(fieldErr("OAR-DOC-15", fmt.Sprintf("flow[%d]", i), s, "a flow step must name a tool; it is empty"))
			return
		}
	}
	r.Flow = list
}

func parseOnError(l *diag.List, obj map[string]any, r *Rule, req *requirements) {
	s, ok := getString(l, obj, "on_error", "on_error", "OAR-DOC-18")
	if !ok {
		return
	}
	switch {
	case s == "fail_closed":
		r.OnError = FailClosed
	case s == "fail_open":
		r.OnError = FailOpen
	case validRuleRef(s):
		r.OnError = Substitute
		req.onError = s
	default:
		l.Add(fieldErr("OAR-DOC-18", "on_error", s, "on_error %q must be fail_closed, fail_open, or a bare or qualified rule identifier", s))
	}
}

func parseOnFire(l *diag.List, obj map[string]any, r *Rule) {
	list, _, ok := checkStringList(l, obj, "on_fire", "on_fire", "OAR-DOC-19")
	if !ok {
		return
	}
	for i, v := range list {
		s := v.(string)
		found := false
		for a, name := range actionNames {
			if name == s {
				r.OnFire = append(r.OnFire, Action(a))
				found = true
				break
			}
		}
		if !found {
			l.Add(fieldErr("OAR-FIRE-1", fmt.Sprintf("on_fire[%d]", i), s, "on_fire action %q is not one of %s", s, strings.Join(actionNames, ", "))).Suggest(s, slices.Values(actionNames))
		}
	}
}

func parseRequires(l *diag.List, obj map[string]any, req *requirements) {
	m, ok := getObject(l, obj, "requires", "requires", "OAR-DOC-21")
	if !ok {
		return
	}
	checkClosed(l, m, requiresMembers, "requires", "OAR-DOC-21", "requires", false)
	if list, present, good := checkStringList(l, m, "profiles", "requires.profiles", "OAR-DOC-21"); present && good {
		req.profileList = list
	}
	if list, present, good := checkStringList(l, m, "facts", "requires.facts", "OAR-DOC-21"); present && good {
		req.factList = list
	}
}

func parseSelector(l *diag.List, obj map[string]any, req *requirements) {
	m, ok := getObject(l, obj, "selector", "selector", "OAR-DOC-13")
	if !ok {
		return
	}
	// A selector has few clauses: their names are sorted on the stack.
	var names [4]string
	for _, k := range appendSortedKeys(names[:0], m) {
		arr, isArr := m[k].([]any)
		if !isArr {
			l.Add(fieldErr("OAR-SEL-1", "selector."+k, m[k], "selector clause %q must be a list of strings; got %s", k, types.DescribeJSON(m[k])))
			continue
		}
		good := true
		for i, v := range arr {
			if _, isStr := v.(string); !isStr {
				l.Add(fieldErr("OAR-SEL-1", fmt.Sprintf("selector.%s[%d]", k, i), v, "selector clause %q values must be strings%s", k, yamlHint(v)))
				good = false
			}
		}
		if good {
			req.selector = append(req.selector, selectorSource{k, arr})
		}
	}
}

func parseTransform(l *diag.List, obj map[string]any, r *Rule, req *requirements) {
	raw, present := obj["transform"]
	if r.Effect == EffectTransform && !present {
		if _, hasEffect := obj["effect"]; hasEffect {
			l.Add(fieldErr("OAR-DOC-22", "transform", nil, "a rule with effect transform must carry a transform object"))
		}
		return
	}
	if !present {
		return
	}
	if r.Effect != EffectTransform {
		if e, ok := obj["effect"].(string); ok {
			l.Add(fieldErr("OAR-DOC-22", "transform", nil, "a rule with effect %s must not carry transform", e))
		}
		return
	}
	m, isObj := raw.(map[string]any)
	if !isObj {
		l.Add(fieldErr("OAR-DOC-22", "transform", raw, "transform must be an object; got %s", types.DescribeJSON(raw)))
		return
	}
	checkClosed(l, m, setOf("action", "target", "replacement"), "transform", "OAR-OPS-13", "transform", false)
	spec := &transformSpec{}
	action, hasAction := getRequiredString(l, m, "action", "transform.action", "OAR-OPS-13", "transform")
	switch {
	case !hasAction:
	case action == "redact":
		spec.action = transform.Redact
	case action == "replace":
		spec.action = transform.Replace
	case action == "annotate":
		spec.action = transform.Annotate
	default:
		l.Add(fieldErr("OAR-OPS-13", "transform.action", action, "transform action %q must be one of redact, replace, annotate", action))
		hasAction = false
	}
	target, hasTarget := getRequiredString(l, m, "target", "transform.target", "OAR-OPS-13", "transform")
	if hasTarget && target == "" {
		l.Add(fieldErr("OAR-OPS-14", "transform.target", target, "transform target is empty; it must be content or a list<map> fact"))
	}
	repl, hasRepl := getString(l, m, "replacement", "transform.replacement", "OAR-OPS-13")
	if hasAction && !hasRepl && action != "redact" {
		if _, ok := m["replacement"]; !ok {
			l.Add(fieldErr("OAR-OPS-13", "transform.replacement", nil, "a %s transform must carry replacement", action))
		}
	}
	spec.replacement = repl
	if !hasRepl && action == "redact" {
		spec.replacement = transform.DefaultRedaction
	}
	spec.targetName = target
	req.target = target
	r.transform = spec
}

func parseDetector(l *diag.List, obj map[string]any, r *Rule) {
	raw, present := obj["detector"]
	_, hasKind := obj["kind"].(string)
	if r.Kind == KindDetector && hasKind && !present {
		l.Add(fieldErr("OAR-DOC-23", "detector", nil, "a rule of kind detector must carry detector, an object with ref"))
		return
	}
	if !present {
		return
	}
	if r.Kind != KindDetector && hasKind {
		l.Add(fieldErr("OAR-DOC-23", "detector", nil, "a rule of kind %s must not carry detector", r.Kind))
		return
	}
	m, isObj := raw.(map[string]any)
	if !isObj {
		l.Add(fieldErr("OAR-DOC-23", "detector", raw, "detector must be an object with ref; got %s", types.DescribeJSON(raw)))
		return
	}
	checkClosed(l, m, setOf("ref"), "detector", "OAR-DOC-23", "detector", false)
	ref, ok := getRequiredString(l, m, "ref", "detector.ref", "OAR-DOC-23", "detector")
	if !ok {
		return
	}
	if !detectorPattern.MatchString(ref) {
		l.Add(fieldErr("OAR-OPS-12", "detector.ref", ref, "detector reference %q must be detector://<name>, the name matching ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", ref))
		return
	}
	r.Detector = ref
}

func parseCopy(l *diag.List, obj map[string]any, req *requirements) {
	m, ok := getObject(l, obj, "copy", "copy", "OAR-DOC-24")
	if !ok {
		return
	}
	checkClosed(l, m, copyMembers, "copy", "OAR-DOC-24", "copy (members are title, what, cause, why, fix, instead)", false)
	for i, name := range copyMemberNames {
		if s, ok := getString(l, m, name, copyPaths[i], "OAR-DOC-24"); ok {
			req.copy[i] = copySource{s, true}
		}
	}
}

func parseRelated(l *diag.List, obj map[string]any) {
	for _, it := range getObjectList(l, obj, "related", "OAR-DOC-30", "a related entry", "id", "type") {
		if id, ok := getRequiredString(l, it.obj, "id", it.path+".id", "OAR-DOC-30", "a related entry"); ok && !validRuleRef(id) {
			l.Add(fieldErr("OAR-DOC-30", it.path+".id", id, "related id %q is neither a bare id nor a qualified <namespace>/<id>", id))
		}
		switch typ, ok := getRequiredString(l, it.obj, "type", it.path+".type", "OAR-DOC-30", "a related entry"); {
		case !ok:
		case typ != "derived" && typ != "obsolete" && typ != "merged" && typ != "renamed" && typ != "similar":
			l.Add(fieldErr("OAR-DOC-30", it.path+".type", typ, "related type %q must be one of derived, obsolete, merged, renamed, similar", typ))
		}
	}
}

// resolve finds the rule a reference names: a qualified identifier exactly, a bare id
// within the referencing rule's namespace ([OAR-EVAL-13], [OAR-OPS-5], [OAR-FIRE-11]).
func (rs *RuleSet) resolve(ref, ns string) (int, bool) {
	i, ok := rs.byQID[ResolveRef(ref, ns)]
	return i, ok
}

// condition is a condition that compiled and the facts and functions it references;
// prog is nil when the set is only checked.
type condition struct {
	prog *expr.Program
	refs []types.Symbol
}

// compileWhen compiles a condition of a rule in namespace, once per set for a source
// that compiles; ok reports that it compiled. The condition is returned by value, so
// that precompile can write a set's conditions into one slice.
func (rs *RuleSet) compileWhen(src, namespace string, owed *[]owedSuggestion) (cond condition, ok bool, errs diag.List) {
	key := [2]string{namespace, src}
	if hit := rs.compiled.when[key]; hit != nil {
		return *hit, true, nil
	}
	if refs, ok := rs.keptCondition(src); ok {
		return condition{refs: refs}, true, nil
	}
	cond, ok, errs, keep := rs.compileSource(src, namespace, owed)
	if keep {
		rs.compiled.kept.KeepChecked(src, cond.refs)
	}
	if ok && len(errs) == 0 && !rs.compiled.sealed {
		held := cond
		rs.compiled.when[key] = &held
	}
	return cond, ok, errs
}

// keptCondition returns the references of the condition src, when the set is checked
// with a ConditionStore that keeps it.
func (rs *RuleSet) keptCondition(src string) ([]types.Symbol, bool) {
	if rs.compiled.kept == nil {
		return nil, false
	}
	return rs.compiled.kept.Checked(src)
}

// compileSource compiles, or only checks, the condition src of a rule in namespace;
// ok reports that it compiled, and keep that its outcome is for the ConditionStore to
// keep: the set is checked with one, and the condition names no rule. owed, when not
// nil, gathers the diagnostics of the rules its fire_count_of and breaker_count_of name
// and the set lacks, for the set to suggest for (suggestRefs); precompile passes nil,
// since a source that fails is compiled again for each rule that has it.
func (rs *RuleSet) compileSource(src, namespace string, owed *[]owedSuggestion) (cond condition, ok bool, errs diag.List, keep bool) {
	c := rs.Capability
	opts := expr.Options{Symbols: c, MaxNodes: c.ExpressionNodesMax}
	// namesRule says whether the outcome depends on the set as well. Only a condition
	// calling fire_count_of or breaker_count_of, whose names it spells out, can name a
	// rule ([OAR-FIRE-11]): only such a condition is given the resolvers.
	var namesRule *bool
	if strings.Contains(src, funcFireCountOf) || strings.Contains(src, funcBreakerCountOf) {
		namesRule = new(bool)
		opts.ResolveRule = func(ref string) (int, bool) {
			*namesRule = true
			if !validRuleRef(ref) {
				return 0, false
			}
			return rs.resolve(ref, namespace)
		}
		if owed != nil {
			opts.UnresolvedRule = func(e *diag.Error, ref string) {
				*owed = append(*owed, owedSuggestion{e: e, ref: ref, namespace: namespace})
			}
		}
	}
	if rs.compiled.checkOnly {
		var refs []types.Symbol
		if refs, errs = expr.Check(src, opts); len(errs) == 0 {
			cond, ok = condition{refs: refs}, true
			keep = rs.compiled.kept != nil && (namesRule == nil || !*namesRule)
		}
	} else {
		opts.CallSlot = rs.compiled.callSlot
		var prog *expr.Program
		if prog, errs = expr.Compile(src, opts); prog != nil {
			cond, ok = condition{prog: prog, refs: prog.Refs()}, true
		}
	}
	return cond, ok, errs, keep
}

// compileCopy compiles a copy member, once per set for a source that compiles.
func (rs *RuleSet) compileCopy(src string) (*template, diag.List) {
	if t := rs.compiled.copy[src]; t != nil {
		return t, nil
	}
	tmpl, errs := copytext.Compile(src, rs.Capability)
	if tmpl == nil {
		return nil, errs
	}
	t := &template{tmpl: tmpl, refs: tmpl.Refs()}
	if len(errs) == 0 && !rs.compiled.sealed {
		rs.compiled.copy[src] = t
	}
	return t, errs
}

// template is a compiled copy template and the facts it references.
type template struct {
	tmpl *copytext.Template
	refs []types.Symbol
}

// precompile seals the cache, compiles every distinct condition and copy template of
// rules on every processor, and keeps those that compile in the cache. A source
// that does not compile is compiled again by each rule that has it, for that rule's
// diagnostics. The cache is the set of sources seen, each nil until it compiles.
func (rs *RuleSet) precompile(rules iter.Seq2[*Rule, requirements]) {
	var whens [][2]string
	var copies []string
	// Every source is nil here: adding one seen already adds nothing.
	for r, req := range rules {
		if req.hasWhen {
			key, seen := [2]string{r.Namespace, req.when}, len(rs.compiled.when)
			if rs.compiled.when[key] = nil; len(rs.compiled.when) > seen {
				whens = append(whens, key)
			}
		}
		for _, m := range req.copy {
			if !m.present {
				continue
			}
			seen := len(rs.compiled.copy)
			if rs.compiled.copy[m.src] = nil; len(rs.compiled.copy) > seen {
				copies = append(copies, m.src)
			}
		}
	}
	rs.compiled.sealed = true
	conds, compiled, keep := make([]condition, len(whens)), make([]bool, len(whens)), make([]bool, len(whens))
	tmpls := make([]*template, len(copies))
	forEach(len(whens)+len(copies), func(i int) {
		if i < len(whens) {
			if refs, ok := rs.keptCondition(whens[i][1]); ok {
				conds[i], compiled[i] = condition{refs: refs}, true
				return
			}
			var errs diag.List
			conds[i], compiled[i], errs, keep[i] = rs.compileSource(whens[i][1], whens[i][0], nil)
			compiled[i] = compiled[i] && len(errs) == 0
			return
		}
		if tmpl, errs := rs.compileCopy(copies[i-len(whens)]); len(errs) == 0 {
			tmpls[i-len(whens)] = tmpl
		}
	})
	// The ConditionStore is told on this goroutine, once per source: the processors do
	// not wait on it for one another.
	for i, key := range whens {
		if keep[i] {
			rs.compiled.kept.KeepChecked(key[1], conds[i].refs)
		}
		if compiled[i] {
			rs.compiled.when[key] = &conds[i]
		}
	}
	for i, src := range copies {
		if tmpls[i] != nil {
			rs.compiled.copy[src] = tmpls[i]
		}
	}
}

// resolveRule checks a well-formed rule against the capability and the set, adding its
// diagnostics to l, its load-time advice to warnings, and to owed the diagnostics about
// references to rules that resolve to none, whose "did you mean" the set adds once
// every rule is resolved (suggestRefs).
func (rs *RuleSet) resolveRule(l, warnings *diag.List, owed *[]owedSuggestion, r *Rule, req requirements, byIndex []*Rule) {
	c := rs.Capability
	rs.resolveAnchor(l, r)
	rs.checkRequires(l, r, req)
	// reach checks that the rule's requires reaches sym, used in the field named by
	// field and suffix (joined only for a diagnostic).
	reach := func(sym types.Symbol, field, suffix string) {
		info := c.symbol(sym.ID)
		switch info.Tier {
		case TierCore:
			return
		case TierProfile:
			if req.reaches(info.Profile, sym.Name) {
				return
			}
			l.Add(fieldErr("OAR-FACT-20", field+suffix, sym.Name, "%q belongs to profile %s, which the rule does not name in requires.profiles", sym.Name, info.Profile))
		case TierHost:
			if req.names(sym.Name) {
				return
			}
			l.Add(fieldErr("OAR-FACT-20", field+suffix, sym.Name, "host fact %q is not named in requires.facts", sym.Name))
		}
	}
	// addRef records sym for assembling the rule's facts: only a set that runs needs
	// them. A rule references few symbols: a scan is cheaper than a set.
	runs := !rs.compiled.checkOnly
	addRef := func(sym types.Symbol) {
		if !runs {
			return
		}
		for _, ref := range r.refs {
			if ref.Name == sym.Name {
				return
			}
		}
		r.refs = append(r.refs, sym)
	}
	if runs && len(req.selector) > 0 {
		r.selector = make([]selectorClause, 0, len(req.selector))
	}
	for _, clause := range req.selector {
		k := clause.fact
		sym, ok := c.Lookup(k)
		switch {
		case !ok:
			l.Add(fieldErr("OAR-SEL-3", "selector."+k, k, "selector clause %q names no declared fact", k)).Suggest(k, c.names(factOf(types.String, types.ListString)))
			continue
		case sym.Func:
			l.Add(fieldErr("OAR-FACT-27", "selector."+k, k, "selector clause %q names an observation function; selectors cannot name a function, a clause names a fact ([OAR-SEL-3])", k))
			continue
		case sym.Type != types.String && sym.Type != types.ListString:
			l.Add(fieldErr("OAR-SEL-3", "selector."+k, k, "selector clause %q names a fact of type %s; a clause names a string or list<string> fact", k, sym.Type))
			continue
		}
		reach(sym, "selector.", k)
		addRef(sym)
		if len(clause.values) == 0 {
			w := fieldErr("OAR-SEL-6", "selector."+k, []any{}, "selector clause %q is empty and matches nothing: rule %s is never selected", k, r.QID)
			w.Index, w.Rule = r.Index, r.QID
			warnings.Add(w)
		}
		if runs {
			r.selector = append(r.selector, newSelectorClause(sym, clause.values))
		}
	}
	if req.hasCount {
		sym, ok := c.Lookup(req.counter)
		switch {
		case !ok:
			l.Add(fieldErr("OAR-FIRE-10", "counter_scope", req.counter, "counter_scope names %q, which is not a declared fact", req.counter)).Suggest(req.counter, c.names(factOf(types.String)))
		case sym.Func:
			l.Add(fieldErr("OAR-FACT-27", "counter_scope", req.counter, "counter_scope names %q, an observation function; a counter scope cannot name a function, it names a string fact ([OAR-FIRE-10])", req.counter))
		case sym.Type != types.String:
			l.Add(fieldErr("OAR-FIRE-10", "counter_scope", req.counter, "counter_scope names %q of type %s; it must name a string fact", req.counter, sym.Type))
		default:
			if info := c.symbol(sym.ID); info.Tier != TierCore && !req.reaches(info.Profile, sym.Name) {
				l.Add(fieldErr("OAR-FIRE-10", "counter_scope", req.counter, "counter_scope names %q, a non-core fact the rule does not reach through requires", req.counter))
			} else {
				r.counterScope = &sym
				addRef(sym)
			}
		}
	}
	if req.hasWhen {
		cond, ok, errs := rs.compileWhen(req.when, r.Namespace, owed)
		for _, e := range errs {
			e.Field = diag.JoinPath("when", e.Field)
			l.Add(e)
		}
		if ok {
			for _, sym := range cond.refs {
				reach(sym, "when", "")
				addRef(sym)
			}
			r.when = cond.prog
		}
	}
	var refs [len(copyMemberNames)][]types.Symbol
	members := 0
	for i, name := range copyMemberNames {
		if !req.copy[i].present {
			continue
		}
		t, errs := rs.compileCopy(req.copy[i].src)
		for _, e := range errs {
			e.Field = diag.JoinPath(copyPaths[i], e.Field)
			l.Add(e)
		}
		if t != nil {
			for _, sym := range t.refs {
				reach(sym, "copy.", name)
				addRef(sym)
			}
			if runs {
				r.copy = append(r.copy, copyMember{name: name, tmpl: t.tmpl})
				if len(t.refs) > 0 {
					refs[members] = t.refs
					members++
				}
			}
		}
	}
	r.copyFacts = copyFacts(refs[:members])
	for i := range r.copy {
		for _, other := range r.copy {
			if other.name < r.copy[i].name {
				r.copy[i].pos++
			}
		}
	}
	if r.transform != nil {
		if !c.SupportsTransform {
			l.Add(fieldErr("OAR-OPS-18", "effect", "transform", "the capability does not implement content mutation (supports_transform is false), so a rule with effect transform cannot load"))
		}
		if t := req.target; t == "content" {
			r.transform.whole = true
		} else if t != "" {
			sym, ok := c.Lookup(t)
			switch {
			case !ok:
				targets := func(yield func(string) bool) {
					if yield("content") {
						c.names(factOf(types.ListMap))(yield)
					}
				}
				l.Add(fieldErr("OAR-OPS-14", "transform.target", t, "transform target %q is neither content nor a declared fact", t)).Suggest(t, targets)
			case sym.Func:
				l.Add(fieldErr("OAR-FACT-27", "transform.target", t, "transform target %q is an observation function; a transform target cannot name a function, it is content or a list<map> fact ([OAR-OPS-14])", t))
			case sym.Type != types.ListMap:
				l.Add(fieldErr("OAR-OPS-14", "transform.target", t, "transform target %q has type %s; it must be content or a list<map> fact", t, sym.Type))
			default:
				reach(sym, "transform.target", "")
				addRef(sym)
				r.transform.target = sym
			}
		}
	}
	if len(r.Flow) > 0 {
		switch w := c.ActivityWindow; {
		case w == 0:
			l.Add(fieldErr("OAR-PROF-3", "flow", nil, "the capability declares activity_window 0 (it tracks no recent activity), so a rule carrying flow cannot load"))
		case len(r.Flow) > w:
			l.Add(fieldErr("OAR-FACT-13", "flow", nil, "flow has %d steps but the capability's activity_window is %d", len(r.Flow), w))
		}
	}
	if r.Detector != "" && !c.HasDetector(r.Detector) {
		l.Add(fieldErr("OAR-OPS-12", "detector.ref", r.Detector, "detector %q is not registered in the capability's detectors", r.Detector)).Suggest(r.Detector, slices.Values(c.Detectors))
	}
	for i, ref := range req.overrides {
		path := fmt.Sprintf("overrides[%d]", i)
		j, ok := rs.resolve(ref, r.Namespace)
		if !ok {
			e := l.Add(fieldErr("OAR-EVAL-13", path, ref, "overrides entry %q resolves to no loaded rule", ref))
			*owed = append(*owed, owedSuggestion{e: e, ref: ref, namespace: r.Namespace})
			continue
		}
		target := byIndex[j]
		if target == nil {
			continue
		}
		if target.Mandatory {
			e := l.Add(fieldErr("OAR-EVAL-17", path, ref, "overrides names %s, a mandatory rule, which cannot be suppressed", target.QID))
			e.Related = []string{target.QID}
			continue
		}
		r.Overrides = append(r.Overrides, j)
	}
	if req.onError != "" {
		j, ok := rs.resolve(req.onError, r.Namespace)
		if !ok {
			e := l.Add(fieldErr("OAR-OPS-5", "on_error", req.onError, "on_error names %q, which resolves to no loaded rule", req.onError))
			*owed = append(*owed, owedSuggestion{e: e, ref: req.onError, namespace: r.Namespace})
		} else {
			r.OnErrorRule = j
		}
	}
	if runs {
		r.traceEntries()
	}
}

// traceEntries sets the rule's trace entries, which share one string.
func (r *Rule) traceEntries() {
	var all strings.Builder
	all.Grow(len(r.trace)*(len(r.QID)+1) + outcomeNamesLen)
	var ends [len(r.trace)]int
	for o := range r.trace {
		all.WriteString(r.QID)
		all.WriteByte(':')
		all.WriteString(Outcome(o).String())
		ends[o] = all.Len()
	}
	entries, start := all.String(), 0
	for o := range r.trace {
		r.trace[o], start = entries[start:ends[o]], ends[o]
	}
}

func (rs *RuleSet) resolveAnchor(l *diag.List, r *Rule) {
	c := rs.Capability
	switch {
	case isCoreAnchor(r.Anchor):
		if local, ok := c.LocalAnchor(r.Anchor); ok {
			r.Local, r.Core = local, true
		} else {
			l.Add(fieldErr("OAR-PROF-4", "anchor", r.Anchor, "anchor %s is a core anchor the capability declares unsupported", r.Anchor))
		}
	case c.hostAnchors[r.Anchor]:
		r.Local = r.Anchor
	default:
		l.Add(fieldErr("OAR-DOC-12", "anchor", r.Anchor, "anchor %q is neither a core anchor nor in the capability's host anchor catalogue", r.Anchor)).Suggest(r.Anchor, c.ruleAnchors())
	}
}

func (rs *RuleSet) checkRequires(l *diag.List, r *Rule, req requirements) {
	c := rs.Capability
	for i, v := range req.profileList {
		if p := v.(string); !c.Provides(p) {
			e := l.Add(fieldErr("OAR-FACT-19", fmt.Sprintf("requires.profiles[%d]", i), p, "rule %s requires profile %q, which the capability does not provide", r.QID, p))
			if profileVocabulary[p] == nil {
				// Not a standard profile's name, so likely a misspelling of a provided one.
				e.Suggest(p, slices.Values(c.Profiles))
			}
		}
	}
	for i, v := range req.factList {
		f := v.(string)
		if _, ok := c.Lookup(f); !ok {
			l.Add(fieldErr("OAR-FACT-19", fmt.Sprintf("requires.facts[%d]", i), f, "rule %s requires %q, which the capability does not provide", r.QID, f)).Suggest(f, c.names(anyName))
		}
	}
}

// Bounds on the suppression cycles checkCycles names: at most maxCycles of them, and
// past the first, only while all the cycles named hold at most maxCycleNames rules.
// Past either the set is refused all the same, with one diagnostic saying that more
// cycles remain: overrides can be written so that every rule closes a cycle of its own
// through all the others, and naming each of those took memory and time of the square
// of the set's size (2.9 GB and 16 s for 8,000 rules).
const (
	maxCycles     = 20
	maxCycleNames = 1000
)

// checkCycles rejects a rule set whose overrides form a cycle, naming the rules in it
// ([OAR-EVAL-16]). byIndex holds the well-formed rules at their member index. Each
// back edge of a depth-first walk closes one cycle, over rules no other back edge's
// cycle has all of, and is followed once, however often an overrides list repeats it.
func (rs *RuleSet) checkCycles(byIndex []*Rule) diag.List {
	var l diag.List
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(byIndex))
	// at is the position of a grey rule on stack.
	at := make([]int, len(byIndex))
	var stack []int
	backEdges := map[[2]int]bool{}
	named, names, full := 0, 0, false
	var visit func(i int)
	visit = func(i int) {
		color[i] = grey
		at[i] = len(stack)
		stack = append(stack, i)
		for _, j := range byIndex[i].Overrides {
			switch color[j] {
			case white:
				visit(j)
			case grey:
				if full || backEdges[[2]int{i, j}] {
					continue
				}
				backEdges[[2]int{i, j}] = true
				cycle := stack[at[j]:]
				first := byIndex[cycle[0]]
				if named == maxCycles || named > 0 && names+len(cycle) > maxCycleNames {
					e := fieldErr("OAR-EVAL-16", "overrides", nil, "overrides forms more suppression cycles than the %d named: break those and load again to see the rest", named)
					e.Index, e.Rule = first.Index, first.QID
					l.Add(e)
					full = true
					continue
				}
				named, names = named+1, names+len(cycle)
				qids := make([]string, 0, len(cycle)+1)
				for _, k := range cycle {
					qids = append(qids, byIndex[k].QID)
				}
				qids = append(qids, byIndex[j].QID)
				e := fieldErr("OAR-EVAL-16", "overrides", nil, "overrides forms a suppression cycle: %s", strings.Join(qids, " -> "))
				e.Index, e.Rule = first.Index, first.QID
				e.Related = qids[:len(qids)-1]
				l.Add(e)
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i, r := range byIndex {
		if r != nil && color[i] == white {
			visit(i)
		}
	}
	return l
}
