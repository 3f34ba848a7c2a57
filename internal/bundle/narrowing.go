package bundle

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// ReasonCapabilityNarrowed: the capability document no longer provides what a pack or
// configuration naming it needs. When something published would stop loading, the
// document's change is held back and the current bundle keeps serving (Assemble).
const ReasonCapabilityNarrowed = "CapabilityNarrowed"

// RulePath is the path of rule i of a RulePack joined with field, as the webhook and
// status spell it (spec.rules[2].when); spec.rules when i is negative.
func RulePath(i int, field string) string {
	if i < 0 {
		return diag.JoinPath("spec.rules", field)
	}
	return diag.JoinPath(fmt.Sprintf("spec.rules[%d]", i), field)
}

// Breakage says why what a bundle published under the capability document before
// would stop loading under another one, after, le being the load of that bundle with
// after: one diagnostic per problem, whose message names the published pack or
// configuration and the place in it, and whose Field is the member of the Capability
// resource whose narrowing broke it, as precisely as the two documents tell — the
// profile list, the host fact's entry, the anchor's entry (narrowed.member; Index is
// -1). The Capability webhook refuses an update with these words, and the controller
// holds the update back with the same words.
func Breakage(le *LoadError, before, after *engine.Capability) diag.List {
	n := narrowedBetween(before, after)
	out := make(diag.List, len(le.Errors))
	for i, e := range le.Errors {
		cp := *e
		cp.Field, cp.Index = n.member(e), -1
		switch le.Stage {
		case StageRules:
			cp.Message = fmt.Sprintf("published RulePack %q would stop loading at %s: %s", le.Owners[i], RulePath(e.Index, e.Field), e.Message)
		case StageConfigs:
			cp.Message = fmt.Sprintf("published OperatorConfig %q would stop applying at %s: %s", le.Owners[i], diag.JoinPath("spec.config", e.Field), e.Message)
		}
		out[i] = &cp
	}
	return out
}

// CapabilityMember is the member of a capability document that decides a rule
// diagnostic's clause, or "spec" when no one member does (the rule's own fault), as a
// path into the Capability resource. Without the document a rule loaded under, an
// unknown identifier ([OAR-FACT-3]) is the rule's own fault: Breakage, which has it,
// tells which member stopped declaring it.
func CapabilityMember(e *diag.Error) string {
	switch e.Clause {
	case "OAR-PROF-4":
		return "spec.anchors"
	case "OAR-DOC-12":
		return "spec.anchors.host"
	case "OAR-FACT-19":
		if strings.HasPrefix(e.Field, "requires.profiles") {
			return "spec.profiles"
		}
		return "spec.host_facts"
	case "OAR-OPS-12":
		return "spec.detectors"
	}
	if m := scalarMember(e.Clause); m != "" {
		return m
	}
	return "spec"
}

// holdNarrowing is rule 1 for a valid capability document that is narrower than what is
// published: when res, assembled against the new document, leaves out entirely a pack
// or configuration Current publishes that an assembly against Current's document would
// keep, the new document is held back like an invalid one. Current keeps serving, the
// result says why (Narrowing, and each resource's outcome), and nothing new is
// published until the document is restored or the packs load against it. Resources
// left out for other reasons (deleted, or a configuration naming a rule of a deleted
// pack) do not hold anything back. c is the new document, loaded.
func holdNarrowing(in Input, c *engine.Capability, res *Result) (*Result, error) {
	if in.Current == nil {
		return res, nil
	}
	dropped := leftOut(in, res)
	if len(dropped) == 0 {
		return res, nil
	}
	if same, err := sameDocument(in.Current.Capability, in.Capability); err != nil || same {
		return res, err
	}
	prevCap, errs := engine.LoadCapability(in.Current.Capability)
	if len(errs) > 0 {
		return res, nil // nothing to compare against
	}
	prevIn := in
	prevIn.Capability = in.Current.Capability
	prev, err := newAssembler(prevIn, prevCap).run(&Result{Packs: map[string]Outcome{}, Configs: map[string]Outcome{}})
	if err != nil {
		return nil, err
	}
	var caused []string
	for _, d := range dropped {
		o, ok := prev.Packs[d.Name]
		if d.Config {
			o, ok = prev.Configs[d.Name]
		}
		if ok && o.PublishedGeneration > 0 {
			caused = append(caused, d.String())
		}
	}
	if len(caused) == 0 {
		return res, nil
	}
	var breakage diag.List
	var le *LoadError
	own := map[string]diag.List{}
	if _, le = load(&Bundle{Capability: in.Capability, Packs: prev.Bundle.Packs, Configs: prev.Bundle.Configs}); le != nil {
		breakage = Breakage(le, prevCap, c)
		for i, e := range le.Errors {
			own[le.Owners[i]] = append(own[le.Owners[i]], e)
		}
	}
	held, err := keepCurrent(in, &Result{Packs: map[string]Outcome{}, Configs: map[string]Outcome{}}, ReasonCapabilityNarrowed,
		fmt.Sprintf("the capability's new document would make %s stop loading, so it is held back and nothing new is published", strings.Join(caused, ", ")))
	if err != nil {
		return nil, err
	}
	held.Narrowing = breakage
	held.Held = caused
	for _, d := range dropped {
		if !slices.Contains(caused, d.String()) {
			continue
		}
		errs := own[d.Name]
		if le != nil && (le.Stage == StageConfigs) != d.Config {
			errs = nil
		}
		o := held.Packs[d.Name]
		if d.Config {
			o = held.Configs[d.Name]
		}
		o.Errors = errs
		o.Message = fmt.Sprintf("the capability's new document would make the published generation %d stop loading", o.PublishedGeneration)
		if len(errs) > 0 {
			o.Message += fmt.Sprintf(" (%s)", describe(errs))
		}
		o.Message += ", so the capability's change is held back"
		if d.Config {
			held.Configs[d.Name] = o
		} else {
			held.Packs[d.Name] = o
		}
	}
	return held, nil
}

// Ref names a pack (a RulePack) or a configuration (an OperatorConfig) of a Capability.
type Ref struct {
	Name   string
	Config bool
}

func (r Ref) String() string {
	if r.Config {
		return fmt.Sprintf("OperatorConfig %q", r.Name)
	}
	return fmt.Sprintf("RulePack %q", r.Name)
}

// leftOut lists the packs and configurations Current publishes that are still given
// (the same objects) and of which res publishes no generation.
func leftOut(in Input, res *Result) []Ref {
	var out []Ref
	packs, configs := in.incumbents()
	for _, name := range sortedNames(packs) {
		if o, ok := res.Packs[name]; ok && o.PublishedGeneration == 0 {
			out = append(out, Ref{Name: name})
		}
	}
	for _, name := range sortedNames(configs) {
		if o, ok := res.Configs[name]; ok && o.PublishedGeneration == 0 {
			out = append(out, Ref{Name: name, Config: true})
		}
	}
	return out
}

// dropped is Result.Dropped: what leftOut lists, and what in.LeftOut names that is
// still given and of which res publishes no generation, packs first, each by name.
func dropped(in Input, res *Result) []Ref {
	out := leftOut(in, res)
	for _, r := range in.LeftOut {
		o, ok := res.Packs[r.Name]
		if r.Config {
			o, ok = res.Configs[r.Name]
		}
		if ok && o.PublishedGeneration == 0 && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y Ref) int {
		if x.Config != y.Config {
			if y.Config {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}

func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// sameDocument says whether two capability documents have the same canonical JSON.
func sameDocument(a, b map[string]any) (bool, error) {
	x, err := marshal(a)
	if err != nil {
		return false, fmt.Errorf("bundle: encoding the published capability: %w", err)
	}
	y, err := marshal(b)
	if err != nil {
		return false, fmt.Errorf("bundle: encoding the capability: %w", err)
	}
	return bytes.Equal(x, y), nil
}
