package admission

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// RulePackValidator admits a RulePack whose rules load against the Capability it names.
type RulePackValidator struct {
	Cluster Cluster
}

var _ admission.Validator[*rulesv1alpha1.RulePack] = &RulePackValidator{}

// ValidateCreate implements admission.Validator.
func (v *RulePackValidator) ValidateCreate(ctx context.Context, p *rulesv1alpha1.RulePack) (admission.Warnings, error) {
	w, err := v.validate(ctx, p)
	return w.response(), err
}

// ValidateUpdate implements admission.Validator: an unchanged spec is admitted as is. A
// pack moved to another Capability is also warned about for what the bundle of the
// Capability it leaves will leave out without it.
func (v *RulePackValidator) ValidateUpdate(ctx context.Context, old, p *rulesv1alpha1.RulePack) (admission.Warnings, error) {
	if apiequality.Semantic.DeepEqual(old.Spec, p.Spec) {
		return nil, nil
	}
	ws, err := v.validate(ctx, p)
	if err != nil || old.Spec.CapabilityRef.Name == p.Spec.CapabilityRef.Name {
		return ws.response(), err
	}
	var w warnings
	if err := leaving(ctx, v.Cluster, old, p.Spec.CapabilityRef.Name, &w); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return append(w, ws...).response(), nil
}

// leaving warns about what the bundle of the Capability old names leaves out once the
// pack old, published there, is moved to the Capability to: each published pack that
// would stop loading without its rules, each published configuration that would no
// longer apply. The controller cannot hold the move back there — the pack is no longer
// bound to that Capability — so it leaves them out of that bundle.
func leaving(ctx context.Context, cl Cluster, old *rulesv1alpha1.RulePack, to string, w *warnings) error {
	key := types.NamespacedName{Namespace: old.Namespace, Name: old.Spec.CapabilityRef.Name}
	capability, err := cl.Capability(ctx, key)
	if err != nil {
		return err
	}
	c, spec, _, _ := capabilityFor(key.Name, capability)
	if c == nil {
		return nil
	}
	n, err := loadNeighbours(ctx, cl, key, old.Name, old.UID, withConfigurations)
	if err != nil || n.own == nil {
		return err
	}
	pc := newPackContext(nil, nil, n)
	pc.cap, pc.capSum, pc.anchor = c, spec, stubAnchor(c)
	pc.moving = fmt.Sprintf("moving this pack to Capability %q takes its rules out of Capability %q's bundle", to, key.Name)
	pc.conflicts(w)
	pc.configurations(w)
	return nil
}

// ValidateDelete implements admission.Validator; deletes are not sent to this webhook.
func (v *RulePackValidator) ValidateDelete(context.Context, *rulesv1alpha1.RulePack) (admission.Warnings, error) {
	return nil, nil
}

// validate judges the pack p: the refusal, and every warning with its kind.
func (v *RulePackValidator) validate(ctx context.Context, p *rulesv1alpha1.RulePack) (warnings, error) {
	if errs := capabilityNameErrors("spec.capabilityRef.name", p.Spec.CapabilityRef.Name); len(errs) > 0 {
		return nil, invalid(rulePackKind, p.Name, errs)
	}
	rules, qids, sums, errs := decodeRules(p.Spec.Rules)
	if len(errs) > 0 {
		return nil, invalid(rulePackKind, p.Name, ruleErrors(errs, rules))
	}
	w, errs, err := v.check(ctx, v.Cluster, p, rules, qids, sums)
	if r, ok := v.Cluster.(refresher); ok && err == nil && len(errs) > 0 {
		// A pack whose rule this one references may be a moment old, not in the cache
		// yet (a GitOps sync applies both at once); the controller, which reads it,
		// resolves the reference.
		w, errs, err = v.check(ctx, r.Fresh(), p, rules, qids, sums)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if len(errs) > 0 {
		return w, invalid(rulePackKind, p.Name, ruleErrors(errs, rules))
	}
	return w, nil
}

// check judges the pack p, whose decoded rules are rules, against what cl holds of its
// Capability and the packs next to it: the diagnostics that refuse it, or the warnings
// it is admitted with.
func (v *RulePackValidator) check(ctx context.Context, cl Cluster, p *rulesv1alpha1.RulePack, rules []any, qids []string, sums [][sha256.Size]byte) (warnings, diag.List, error) {
	var w warnings
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.CapabilityRef.Name}
	capability, err := cl.Capability(ctx, key)
	if err != nil {
		return w, nil, err
	}
	n, err := loadNeighbours(ctx, cl, key, p.Name, p.UID, withConfigurations)
	if err != nil {
		return w, nil, err
	}
	pc := newPackContext(rules, qids, n)
	pc.sums = sums
	c, spec, clause, why := capabilityFor(key.Name, capability)
	if c == nil {
		w.add(CapabilityUnavailable, clause, "spec.capabilityRef.name", "%s: only %s were checked; the rest is checked once the Capability loads, and the controller reports it in status", why, shapeChecks)
		if errs := shapeErrors(rules); len(errs) > 0 {
			return w, errs, nil
		}
		pc.duplicates(&w)
		return w, nil, nil
	}
	pc.cap, pc.capSum, pc.anchor = c, spec, stubAnchor(c)
	if errs := pc.load(&w); len(errs) > 0 {
		return w, errs, nil
	}
	raw := 0
	for _, r := range p.Spec.Rules {
		raw += len(r.Raw)
	}
	if errs := pc.size(p.Name, p.Generation, raw, c.Document(), &w); len(errs) > 0 {
		return w, errs, nil
	}
	pc.duplicates(&w)
	pc.dependencies(&w)
	pc.conflicts(&w)
	pc.configurations(&w)
	return w, nil, nil
}

// capabilityFor loads the Capability named name, and returns the SHA-256 of the spec
// it loaded from. When it does not load — it does not exist, or its document is
// invalid — it says why, and under which clause. A Capability that loaded is kept in
// capabilities.
func capabilityFor(name string, capability *rulesv1alpha1.Capability) (c *engine.Capability, spec [sha256.Size]byte, clause, why string) {
	if capability == nil {
		return nil, spec, "", fmt.Sprintf("Capability %q does not exist", name)
	}
	raw, err := json.Marshal(capability.Spec)
	if err != nil {
		return nil, spec, "", fmt.Sprintf("Capability %q cannot be read: %v", name, err)
	}
	sum := sha256.Sum256(raw)
	if c, ok := capabilities.get(sum); ok {
		return c, sum, "", ""
	}
	doc, err := resource.CapabilityDocument(capability)
	if err != nil {
		return nil, spec, "", fmt.Sprintf("Capability %q cannot be read: %v", name, err)
	}
	c, errs := engine.LoadCapability(doc)
	if len(errs) > 0 {
		return nil, spec, errs[0].Clause, fmt.Sprintf("Capability %q is invalid (%s)", name, detail(errs[0]))
	}
	capabilities.put(sum, c)
	return c, sum, "", ""
}

// capabilitiesPerGeneration bounds the Capabilities kept loaded: at most two
// generations of this many.
const capabilitiesPerGeneration = 16

// capabilities keeps the Capabilities that loaded by the SHA-256 of their spec's JSON,
// which is all a load depends on: the packs naming one are checked against it loaded
// once. A loaded Capability is not modified.
var capabilities = generations[[sha256.Size]byte, *engine.Capability]{size: capabilitiesPerGeneration}

// packContext is one RulePack under validation and what surrounds it.
type packContext struct {
	rules []any
	// sums are the SHA-256 of each rule's JSON.
	sums [][sha256.Size]byte
	// qids are the rules' qualified identifiers ("" where malformed) and ours their set.
	qids []string
	ours map[string]bool
	n    *neighbours
	// refs are each rule's references, once the Capability loads.
	refs [][]reference
	// removed are the rules of the pack's published generation it no longer has, and
	// removedIDs their bare ids.
	removed, removedIDs map[string]bool
	// cap is the Capability, once it loads, and anchor an anchor stand-in rules may use
	// under it.
	cap    *engine.Capability
	anchor string
	// capSum is the SHA-256 of the spec cap was loaded from.
	capSum [sha256.Size]byte
	// moving, when set, says where the pack moves to: the context is then the
	// Capability it leaves, which it no longer has rules in.
	moving string
}

// newPackContext is the context of the pack whose rules, with the qualified
// identifiers qids, are under validation next to n.
func newPackContext(rules []any, qids []string, n *neighbours) *packContext {
	p := &packContext{rules: rules, qids: qids, n: n, removed: map[string]bool{}, removedIDs: map[string]bool{}}
	p.ours = idSet(p.qids)
	if n.own != nil {
		for _, q := range qualifiedIDs(n.own.Rules) {
			if q != "" && !p.ours[q] {
				p.removed[q], p.removedIDs[idOf(q)] = true, true
			}
		}
	}
	return p
}

// load loads the pack against the Capability next to a stub for every rule of another
// pack it references, so that such a reference resolves: what the loader refuses then is
// the pack's own — a rule it rejects, a duplicate or a cycle within the pack, a reference
// no pack defines. What the loader says is kept in loads; the warnings it loads the
// pack's own rules with are added to w, as the controller puts them in status.
func (p *packContext) load(w *warnings) diag.List {
	p.refs = make([][]reference, len(p.rules))
	spread(len(p.rules), func(i int, _ *engine.SharedJSON) { p.refs[i] = references(p.rules[i], p.cap) })
	elsewhere := map[string]bool{}
	for i := range p.rules {
		for _, ref := range p.refs[i] {
			if _, ok := p.n.owner[ref.target]; ok {
				elsewhere[ref.target] = true
			}
		}
	}
	var names []string
	if p.anchor != "" {
		names = stubNames(elsewhere, p.ours)
	}
	key := loadKey(p.capSum, p.sums, names)
	res, ok := loads.get(key)
	if !ok {
		docs := slices.Clip(p.rules)
		for _, q := range names {
			docs = append(docs, stub(q, p.anchor))
		}
		res.warnings, res.errs = engine.CheckRulesKept(p.cap, docs, conditionStore{p.capSum})
		if len(res.errs)+len(res.warnings) <= keptDiagnosticsMax {
			loads.put(key, res)
		}
	}
	p.loadWarnings(res.warnings, w)
	return res.errs
}

// loadWarnings adds to w each load warning about one of the pack's own rules — not a
// stand-in's — naming clause, rule and field.
func (p *packContext) loadWarnings(l diag.List, w *warnings) {
	for _, e := range l {
		if e.Index < 0 || e.Index >= len(p.rules) {
			continue
		}
		cp := *e
		cp.Clause, cp.Rule = "", ruleName(e, p.rules)
		w.add(LoadAdvice, e.Clause, rulePath(e.Index, e.Field), "%s", detail(&cp))
	}
}
