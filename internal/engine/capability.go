package engine

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/expr"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// Tier says where a declared name comes from ([OAR-FACT-14]).
type Tier uint8

// The tiers: core, a standard profile, or the host's own.
const (
	TierCore Tier = iota
	TierProfile
	TierHost
)

// symbolInfo is one declared name with its provenance.
type symbolInfo struct {
	types.Symbol
	Tier    Tier
	Profile string // the profile for TierProfile
	// Detector marks a fact produced by a registered detector ([OAR-OPS-22]).
	Detector bool
	// builtin names what the engine computes for the symbol, so evaluation tells the
	// symbols apart without comparing names.
	builtin builtin
}

// builtin is a symbol the engine itself produces (section 5.3 and the tool profile).
type builtin uint8

const (
	notBuiltin builtin = iota
	builtinAnchor
	builtinFireCount
	builtinBreakerCount
	builtinTool
	builtinToolArgs
	builtinToolFingerprint
	builtinToolArgString
	builtinToolArgInt
	builtinToolArgBool
)

// engineOwned reports whether only the engine produces b, whatever a host or a
// detector reports under its name: the anchor, which every rule at an occurrence
// observes alike, and the counters of the occurrence's snapshot ([OAR-FIRE-6]).
func (b builtin) engineOwned() bool {
	return b == builtinAnchor || b == builtinFireCount || b == builtinBreakerCount
}

// builtinOf is the builtin a declared symbol is, by tier and name.
func builtinOf(tier Tier, profile, name string) builtin {
	switch {
	case tier == TierCore:
		switch name {
		case factAnchor:
			return builtinAnchor
		case factFireCount:
			return builtinFireCount
		case factBreakerCount:
			return builtinBreakerCount
		}
	case tier == TierProfile && profile == "tool":
		switch name {
		case factTool:
			return builtinTool
		case factToolArgs:
			return builtinToolArgs
		case factToolFingerprint:
			return builtinToolFingerprint
		case funcToolArgString:
			return builtinToolArgString
		case funcToolArgInt:
			return builtinToolArgInt
		case funcToolArgBool:
			return builtinToolArgBool
		}
	}
	return notBuiltin
}

// HostFact is one entry of host_facts ([OAR-FACT-27]).
type HostFact struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Capability is a validated capability document (section 8.2, [OAR-FACT-21]) and the
// closed, typed fact environment it declares ([OAR-FACT-1]).
type Capability struct {
	Version            string
	Host               string
	ActivityWindow     int
	SupportsTransform  bool
	ExpressionNodesMax int
	Profiles           []string
	HostFacts          []HostFact
	Detectors          []string
	HostAnchors        []string

	// coreToLocal maps each supported core anchor to its local anchor; localToCore
	// inverts it.
	coreToLocal map[string]string
	localToCore map[string]string
	unsupported map[string]bool
	hostAnchors map[string]bool
	profileSet  map[string]bool
	detectorSet map[string]bool

	symbols []symbolInfo
	byName  map[string]int
	// toolArgs is the symbol ID of tool_args when the tool profile is claimed.
	toolArgs int

	doc map[string]any
}

// defaultExpressionNodesMax is the floor of [OAR-EXPR-17]; an omitted
// expression_nodes_max declares it.
const defaultExpressionNodesMax = 256

var capabilityMembers = setOf("oar_capability_version", "host", "anchors", "profiles", "activity_window",
	"supports_transform", "expression_nodes_max", "host_facts", "detectors")

// LoadCapability validates a decoded capability document and builds its environment.
// An engine refuses to start on an invalid one ([OAR-FACT-24]); every problem is
// reported, not only the first.
func LoadCapability(doc any) (*Capability, diag.List) {
	var l diag.List
	obj, ok := doc.(map[string]any)
	if !ok {
		l.Add(fieldErr("OAR-FACT-21", "", doc, "a capability document must be a JSON object; got %s", types.DescribeJSON(doc)))
		return nil, l
	}
	if !checkVersion(&l, obj, "oar_capability_version") {
		return nil, l
	}
	c := &Capability{
		Version:            obj["oar_capability_version"].(string),
		ExpressionNodesMax: defaultExpressionNodesMax,
		coreToLocal:        map[string]string{},
		localToCore:        map[string]string{},
		unsupported:        map[string]bool{},
		hostAnchors:        map[string]bool{},
		profileSet:         map[string]bool{},
		detectorSet:        map[string]bool{},
		byName:             map[string]int{},
		doc:                obj,
	}
	checkClosed(&l, obj, capabilityMembers, "", "OAR-FACT-21", "the capability document", true)

	if host, ok := getRequiredString(&l, obj, "host", "host", "OAR-FACT-21", "a capability document"); ok {
		if !namespacePattern.MatchString(host) {
			l.Add(fieldErr("OAR-FACT-21", "host", host, "host %q must follow the namespace grammar of [OAR-DOC-7]", host))
		}
		c.Host = host
	}

	c.loadAnchors(&l, obj)
	c.loadDetectors(&l, obj)
	c.loadProfiles(&l, obj)
	c.loadScalars(&l, obj)

	c.declareVocabulary()
	c.loadHostFacts(&l, obj)

	if len(l) > 0 {
		l.Sort()
		return nil, l
	}
	return c, nil
}

func (c *Capability) loadAnchors(l *diag.List, obj map[string]any) {
	anchors, ok := getObject(l, obj, "anchors", "anchors", "OAR-PROF-2")
	if !ok {
		if _, present := obj["anchors"]; !present {
			l.Add(fieldErr("OAR-PROF-2", "anchors", nil, "missing required member \"anchors\": the anchor profile map must declare every core anchor"))
		}
		return
	}
	checkClosed(l, anchors, setOf("core", "unsupported", "host"), "anchors", "OAR-PROF-2", "anchors", false)
	seen := map[string]string{} // core anchor -> where declared
	if core, ok := getObject(l, anchors, "core", "anchors.core", "OAR-PROF-2"); ok {
		for _, k := range sortedKeys(core) {
			path := "anchors.core." + k
			if !isCoreAnchor(k) {
				l.Add(fieldErr("OAR-PROF-2", path, nil, "%q is not a core anchor; anchors.core maps the eight core anchors of section 8.1 to local anchors", k)).Suggest(k, slices.Values(CoreAnchors))
				continue
			}
			// Declared, even when its local anchor is refused below: the error says
			// what is wrong with the entry, not that the entry is missing.
			seen[k] = "anchors.core"
			// A local anchor is the host's own word ([OAR-CONF-29]): any non-empty
			// string, a core anchor's spelling included, which redefines nothing
			// ([OAR-PROF-1]) because rules resolve through this map.
			local, isStr := core[k].(string)
			if !isStr || local == "" {
				l.Add(fieldErr("OAR-PROF-2", path, core[k], "the local anchor for %s must be a non-empty string", k))
				continue
			}
			if other, dup := c.localToCore[local]; dup {
				l.Add(fieldErr("OAR-PROF-2", path, local, "local anchor %q implements both %s and %s; each core anchor has its own local anchor", local, other, k))
				continue
			}
			c.coreToLocal[k] = local
			c.localToCore[local] = k
		}
	}
	if list, ok := getStringList(l, anchors, "unsupported", "anchors.unsupported", "OAR-PROF-2"); ok {
		for i, a := range list {
			path := fmt.Sprintf("anchors.unsupported[%d]", i)
			if !isCoreAnchor(a) {
				l.Add(fieldErr("OAR-PROF-2", path, a, "%q is not a core anchor", a)).Suggest(a, slices.Values(CoreAnchors))
				continue
			}
			if where, dup := seen[a]; dup {
				l.Add(fieldErr("OAR-PROF-2", path, a, "core anchor %s is declared twice (also in %s); every core anchor must appear exactly once", a, where))
				continue
			}
			seen[a] = "anchors.unsupported"
			c.unsupported[a] = true
		}
	}
	for _, a := range CoreAnchors {
		if _, ok := seen[a]; !ok {
			l.Add(fieldErr("OAR-PROF-2", "anchors", nil, "core anchor %s is declared neither in anchors.core nor in anchors.unsupported; every core anchor must appear exactly once", a))
		}
	}
	if list, ok := getStringList(l, anchors, "host", "anchors.host", "OAR-PROF-5"); ok {
		for i, a := range list {
			path := fmt.Sprintf("anchors.host[%d]", i)
			switch {
			case a == "":
				l.Add(fieldErr("OAR-PROF-5", path, a, "a host-native anchor must be a non-empty string"))
			case isCoreAnchor(a):
				l.Add(fieldErr("OAR-PROF-5", path, a, "host-native anchor %q collides with a core anchor identifier", a))
			case c.hostAnchors[a]:
				l.Add(fieldErr("OAR-PROF-5", path, a, "host-native anchor %q is declared twice", a))
			case c.localToCore[a] != "":
				l.Add(fieldErr("OAR-DOC-12", path, a, "host-native anchor %q is also the local anchor of %s; an anchor names exactly one lifecycle moment", a, c.localToCore[a]))
			default:
				c.hostAnchors[a] = true
				c.HostAnchors = append(c.HostAnchors, a)
			}
		}
	}
}

func (c *Capability) loadDetectors(l *diag.List, obj map[string]any) {
	list, ok := getStringList(l, obj, "detectors", "detectors", "OAR-FACT-21")
	if !ok {
		return
	}
	for i, d := range list {
		path := fmt.Sprintf("detectors[%d]", i)
		switch {
		case !detectorPattern.MatchString(d):
			l.Add(fieldErr("OAR-OPS-12", path, d, "detector reference %q must be detector://<name>, the name matching ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", d))
		case c.detectorSet[d]:
			l.Add(fieldErr("OAR-FACT-21", path, d, "detector %q is declared twice", d))
		default:
			c.detectorSet[d] = true
			c.Detectors = append(c.Detectors, d)
		}
	}
}

func (c *Capability) loadProfiles(l *diag.List, obj map[string]any) {
	list, ok := getStringList(l, obj, "profiles", "profiles", "OAR-FACT-21")
	if !ok {
		return
	}
	for i, p := range list {
		path := fmt.Sprintf("profiles[%d]", i)
		switch {
		case profileVocabulary[p] == nil:
			l.Add(fieldErr("OAR-FACT-24", path, p, "%q is not a standard profile; an engine provides a profile whole or not at all (%s)", p, strings.Join(ProfileNames, ", "))).Suggest(p, slices.Values(ProfileNames))
		case c.profileSet[p]:
			l.Add(fieldErr("OAR-FACT-24", path, p, "profile %q is claimed twice", p))
		case detectorProfiles[p] && len(c.Detectors) == 0:
			l.Add(fieldErr("OAR-OPS-22", path, p, "profile %q is produced by a registered detector, but the detectors list is empty", p))
		default:
			c.profileSet[p] = true
			c.Profiles = append(c.Profiles, p)
		}
	}
}

// The largest activity_window and expression_nodes_max this engine adopts. The
// specification sets no ceiling; a capability declaring more is refused, and the
// conformance runner reports a fixture declaring more as skipped ([OAR-CONF-20]).
const (
	MaxActivityWindow  = 1 << 20
	MaxExpressionNodes = expr.MaxNodesCeiling
)

func (c *Capability) loadScalars(l *diag.List, obj map[string]any) {
	if raw, ok := obj["activity_window"]; ok {
		n, isInt := types.AsInt(raw)
		switch {
		case !isInt:
			l.Add(fieldErr("OAR-PROF-3", "activity_window", raw, "activity_window must be an integer; got %s", types.DescribeJSON(raw)))
		case n < 0:
			l.Add(fieldErr("OAR-PROF-3", "activity_window", raw, "activity_window must be zero or more"))
		case n > MaxActivityWindow:
			l.Add(fieldErr("OAR-PROF-3", "activity_window", raw, "activity_window %d is larger than this engine supports (%d)", n, MaxActivityWindow))
		default:
			c.ActivityWindow = int(n)
		}
	}
	if b, ok := getBool(l, obj, "supports_transform", "supports_transform", "OAR-FACT-21"); ok {
		c.SupportsTransform = b
	}
	if raw, ok := obj["expression_nodes_max"]; ok {
		n, isInt := types.AsInt(raw)
		switch {
		case !isInt:
			l.Add(fieldErr("OAR-FACT-21", "expression_nodes_max", raw, "expression_nodes_max must be an integer; got %s", types.DescribeJSON(raw)))
		case n < defaultExpressionNodesMax:
			l.Add(fieldErr("OAR-EXPR-17", "expression_nodes_max", raw, "expression_nodes_max %d is below 256, the parse-tree size every engine must accept", n))
		case n > MaxExpressionNodes:
			l.Add(fieldErr("OAR-EXPR-17", "expression_nodes_max", raw, "expression_nodes_max %d is larger than this engine supports (%d)", n, MaxExpressionNodes))
		default:
			c.ExpressionNodesMax = int(n)
		}
	}
}

// declareVocabulary enters the core tier and every claimed profile, whole
// ([OAR-FACT-15], [OAR-FACT-16]).
func (c *Capability) declareVocabulary() {
	for _, e := range coreVocabulary {
		c.declare(e, TierCore, "")
	}
	for _, p := range ProfileNames {
		if !c.profileSet[p] {
			continue
		}
		for _, e := range profileVocabulary[p] {
			c.declare(e, TierProfile, p)
		}
	}
}

func (c *Capability) declare(e vocabEntry, tier Tier, profile string) {
	id := len(c.symbols)
	s := symbolInfo{
		Symbol:   types.Symbol{Name: e.name, Func: e.fn, Type: e.kind, Arg: e.arg, ID: id},
		Tier:     tier,
		Profile:  profile,
		Detector: detectorProfiles[profile],
		builtin:  builtinOf(tier, profile, e.name),
	}
	s.RuleRef = tier == TierCore && (e.name == funcFireCountOf || e.name == funcBreakerCountOf)
	if s.builtin == builtinToolArgs {
		c.toolArgs = id
	}
	c.symbols = append(c.symbols, s)
	c.byName[e.name] = id
}

func (c *Capability) loadHostFacts(l *diag.List, obj map[string]any) {
	for _, it := range getObjectList(l, obj, "host_facts", "OAR-FACT-27", "a host fact", "name", "type") {
		path := it.path
		name, okName := getRequiredString(l, it.obj, "name", path+".name", "OAR-FACT-27", "a host fact")
		typ, okType := getRequiredString(l, it.obj, "type", path+".type", "OAR-FACT-27", "a host fact")
		if !okName || !okType {
			continue
		}
		if msg := checkHostFactName(name); msg != "" {
			l.Add(fieldErr("OAR-FACT-18", path+".name", name, "host fact %q %s", name, msg))
			continue
		}
		if ns := name[:strings.LastIndex(name, ".")]; c.Host != "" && !ownsNamespace(c.Host, ns) {
			l.Add(fieldErr("OAR-FACT-18", path+".name", name, "host fact %q is published under %q, a namespace host %q does not own: it must be %q or a namespace beneath it", name, ns, c.Host, c.Host))
			continue
		}
		if _, dup := c.byName[name]; dup {
			l.Add(fieldErr("OAR-FACT-27", path+".name", name, "%q already occupies an entry of the symbol environment; every fact and function occupies exactly one", name))
			continue
		}
		e := vocabEntry{name: name}
		if k, ok := types.ParseKind(strings.TrimSpace(typ)); ok {
			e.kind = k
		} else if sig, ok := types.ParseSignature(typ); ok {
			e.fn, e.arg, e.kind = true, sig.Arg, sig.Result
		} else if strings.Contains(typ, "->") {
			l.Add(fieldErr("OAR-FACT-27", path+".type", typ, "host function %q: signature %q must be (T) -> R with T and R each one of bool, int, double, string", name, typ))
			continue
		} else {
			l.Add(fieldErr("OAR-FACT-22", path+".type", typ, "host fact %q: type %q is not a fact type; one of bool, int, double, string, list<string>, map<string,string>, list<map>, map", name, typ))
			continue
		}
		c.declare(e, TierHost, "")
		c.HostFacts = append(c.HostFacts, HostFact{Name: name, Type: typ})
	}
}

// checkHostFactName checks <host>.<fact> ([OAR-FACT-18]) and that the whole name is an
// identifier of Appendix A, so a condition or copy binding can name it; it returns
// what is wrong, or "".
func checkHostFactName(s string) string {
	dot := strings.LastIndex(s, ".")
	if dot <= 0 {
		return "must be published under a namespace the host owns, written <host>.<fact>"
	}
	ns, name := s[:dot], s[dot+1:]
	switch first, _, _ := strings.Cut(s, "."); {
	case !namespacePattern.MatchString(ns):
		return fmt.Sprintf("must be written <host>.<fact> with <host> following the grammar of [OAR-DOC-7]; %q does not", ns)
	case !namePattern.MatchString(name):
		return fmt.Sprintf("must end in a fact name of letters, digits and _; %q is not one", name)
	case !validIdentifier(s):
		return "cannot be named by a condition: a dotted identifier of Appendix A has no '-' and no segment starting with a digit"
	case reservedWords[first]:
		return fmt.Sprintf("cannot be named by a condition: %q is a reserved word ([OAR-EXPR-24])", first)
	}
	for _, segment := range strings.Split(s, ".")[1:] {
		if reservedWords[segment] {
			return fmt.Sprintf("cannot be named by a condition: its segment %q is a reserved word, which a condition lexes as itself, never as part of a name ([OAR-EXPR-24])", segment)
		}
	}
	return ""
}

// ownsNamespace reports whether host owns namespace ns ([OAR-FACT-18]): ns is host
// itself or beneath it, compared by whole dot-separated labels, so acme.gwx is not
// under acme.gw. A parent of host is not owned: sibling hosts share it and could
// publish the same name (see testdata/conformance/README.md).
func ownsNamespace(host, ns string) bool {
	return ns == host || strings.HasPrefix(ns, host+".")
}

// Lookup implements types.Symbols over the capability's environment.
func (c *Capability) Lookup(name string) (types.Symbol, bool) {
	id, ok := c.byName[name]
	if !ok {
		return types.Symbol{}, false
	}
	return c.symbols[id].Symbol, true
}

// All implements types.Listing: every declared fact and function, in declaration order.
func (c *Capability) All() iter.Seq[types.Symbol] {
	return func(yield func(types.Symbol) bool) {
		for _, s := range c.symbols {
			if !yield(s.Symbol) {
				return
			}
		}
	}
}

func (c *Capability) symbol(id int) *symbolInfo { return &c.symbols[id] }

// Provides reports whether the capability claims profile p.
func (c *Capability) Provides(p string) bool { return c.profileSet[p] }

// LocalAnchor resolves a core anchor through the profile map ([OAR-PROF-4]).
func (c *Capability) LocalAnchor(core string) (string, bool) {
	l, ok := c.coreToLocal[core]
	return l, ok
}

// CoreAnchorOf returns the core anchor a local anchor implements, if any.
func (c *Capability) CoreAnchorOf(local string) (string, bool) {
	core, ok := c.localToCore[local]
	return core, ok
}

// DeclaresAnchor reports whether local is an anchor the capability declares: the local
// anchor of a supported core anchor, or a host-native anchor of its catalogue.
func (c *Capability) DeclaresAnchor(local string) bool {
	_, isCore := c.localToCore[local]
	return isCore || c.hostAnchors[local]
}

// Document returns the capability document as it was loaded.
func (c *Capability) Document() map[string]any { return c.doc }

// HasDetector reports whether ref is registered ([OAR-OPS-12]).
func (c *Capability) HasDetector(ref string) bool { return c.detectorSet[ref] }
