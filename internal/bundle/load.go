package bundle

import (
	"fmt"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// The stages of Load, named in LoadError.Stage.
const (
	StageCapability = "capability"
	StageRules      = "rules"
	StageConfigs    = "configs"
)

// Loaded is a bundle the engine accepted, ready to evaluate occurrences.
type Loaded struct {
	Bundle     *Bundle
	Capability *engine.Capability
	RuleSet    *engine.RuleSet
	Program    *engine.Program
	// RuleOwner names the pack of each rule, by rule index in RuleSet.
	RuleOwner []string
}

// LoadError says which stage of Load refused the bundle and why.
type LoadError struct {
	// Stage is StageCapability, StageRules or StageConfigs.
	Stage string
	// Errors are the engine's diagnostics. In the rules stage each Index is relative
	// to the pack the rule belongs to; in the configs stage Index is -1 (the
	// configuration document itself).
	Errors diag.List
	// Owners names, for each diagnostic, the pack (rules stage) or configuration
	// (configs stage) it belongs to; "" in the capability stage.
	Owners []string
	// raw are the engine's diagnostics as it reported them (rule indices into the
	// whole set), for assembly.
	raw diag.List
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(map[string]string{
		StageCapability: "bundle: the capability document does not load:",
		StageRules:      "bundle: the rules do not load:",
		StageConfigs:    "bundle: the configurations do not apply:",
	}[e.Stage])
	for i, d := range e.Errors {
		b.WriteString("\n  ")
		switch e.Stage {
		case StageRules:
			fmt.Fprintf(&b, "pack %q: %s", e.Owners[i], d.Format(fmt.Sprintf("rules[%d]", d.Index)))
		case StageConfigs:
			fmt.Fprintf(&b, "configuration %q: %s", e.Owners[i], d.Format("document"))
		default:
			b.WriteString(d.Error())
		}
	}
	return b.String()
}

// Load loads a bundle with the engine: the capability, every pack's rules as one rule
// set (pack order, then rule order, [OAR-DOC-31]) and the configurations in order
// ([OAR-CFG-7]). On failure the error is a *LoadError.
func Load(b *Bundle) (*Loaded, error) {
	l, err := load(b)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// load is Load returning the concrete error type, and on a configs-stage failure the
// partly filled Loaded (capability and rule set) with it.
func load(b *Bundle) (*Loaded, *LoadError) {
	c, errs := engine.LoadCapability(b.Capability)
	if len(errs) > 0 {
		return nil, &LoadError{Stage: StageCapability, Errors: errs, Owners: make([]string, len(errs))}
	}
	l := &Loaded{Bundle: b, Capability: c}
	var docs []any
	offsets := make([]int, len(b.Packs))
	for i, p := range b.Packs {
		offsets[i] = len(docs)
		docs = append(docs, p.Rules...)
		for range p.Rules {
			l.RuleOwner = append(l.RuleOwner, p.Name)
		}
	}
	rs, errs := engine.LoadRules(c, docs)
	if len(errs) > 0 {
		le := &LoadError{Stage: StageRules, raw: errs}
		for _, e := range errs {
			cp := *e
			owner := ""
			if e.Index >= 0 && e.Index < len(l.RuleOwner) {
				pack := packAt(offsets, e.Index)
				owner = b.Packs[pack].Name
				cp.Index = e.Index - offsets[pack]
			}
			le.Errors = append(le.Errors, &cp)
			le.Owners = append(le.Owners, owner)
		}
		return nil, le
	}
	l.RuleSet = rs
	cfgs := make([]any, len(b.Configs))
	for i, cf := range b.Configs {
		cfgs[i] = cf.Document
	}
	prog, errs := engine.Configure(rs, cfgs)
	if len(errs) > 0 {
		le := &LoadError{Stage: StageConfigs}
		for _, e := range errs {
			cp := *e
			owner := ""
			if e.Index >= 0 && e.Index < len(b.Configs) {
				owner = b.Configs[e.Index].Name
			}
			cp.Index = -1
			le.Errors = append(le.Errors, &cp)
			le.Owners = append(le.Owners, owner)
		}
		return l, le
	}
	l.Program = prog
	return l, nil
}

// packAt returns the pack whose rules start at or before index, given ascending offsets.
func packAt(offsets []int, index int) int {
	lo, hi := 0, len(offsets)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if offsets[mid] <= index {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Empty packs share an offset with the next pack; the owner is the last of them.
	return lo
}
