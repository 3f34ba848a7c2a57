package admission

import (
	"context"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// OperatorConfigValidator admits a configuration document of the right shape and version
// ([OAR-CFG-1]) that applies to the rule set published for its Capability ([OAR-CFG-4],
// [OAR-CFG-5], [OAR-CFG-8]).
type OperatorConfigValidator struct {
	Cluster Cluster
}

var _ admission.Validator[*rulesv1alpha1.OperatorConfig] = &OperatorConfigValidator{}

// noRules is an empty rule set: a configuration applied to it says everything that needs
// no rules, and names every rule it mentions as not loaded ([OAR-CFG-4]).
var noRules, _ = engine.LoadRules(standIn, nil)

// ValidateCreate implements admission.Validator.
func (v *OperatorConfigValidator) ValidateCreate(ctx context.Context, oc *rulesv1alpha1.OperatorConfig) (admission.Warnings, error) {
	w, err := v.validate(ctx, oc)
	return w.response(), err
}

// ValidateUpdate implements admission.Validator: an unchanged spec is admitted as is.
func (v *OperatorConfigValidator) ValidateUpdate(ctx context.Context, old, oc *rulesv1alpha1.OperatorConfig) (admission.Warnings, error) {
	if apiequality.Semantic.DeepEqual(old.Spec, oc.Spec) {
		return nil, nil
	}
	w, err := v.validate(ctx, oc)
	return w.response(), err
}

// ValidateDelete implements admission.Validator; deletes are not sent to this webhook.
func (v *OperatorConfigValidator) ValidateDelete(context.Context, *rulesv1alpha1.OperatorConfig) (admission.Warnings, error) {
	return nil, nil
}

// validate judges the configuration oc: the refusal, and every warning with its kind.
func (v *OperatorConfigValidator) validate(ctx context.Context, oc *rulesv1alpha1.OperatorConfig) (warnings, error) {
	if errs := capabilityNameErrors("spec.capabilityRef.name", oc.Spec.CapabilityRef.Name); len(errs) > 0 {
		return nil, invalid(operatorConfigKind, oc.Name, errs)
	}
	doc, err := resource.ConfigDocument(oc)
	if err != nil {
		e := diag.New("OAR-CFG-1", "", "the configuration is not a JSON document: %v", err)
		return nil, invalid(operatorConfigKind, oc.Name, field.ErrorList{fieldError("spec.config", e)})
	}
	key := types.NamespacedName{Namespace: oc.Namespace, Name: oc.Spec.CapabilityRef.Name}
	w, errs, err := v.check(ctx, v.Cluster, key, doc)
	if r, ok := v.Cluster.(refresher); ok && err == nil && hasClause(errs, "OAR-CFG-4") {
		// The pack or bundle naming the rule may be a moment old, not in the cache yet
		// (a GitOps sync applies a pack and the configuration naming its rules at once).
		w, errs, err = v.check(ctx, r.Fresh(), key, doc)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if len(errs) > 0 {
		return w, invalid(operatorConfigKind, oc.Name, configErrors(errs))
	}
	return w, nil
}

// check judges doc against what cl holds of the Capability key: its published rule set,
// or only the document's shape when nothing is published.
func (v *OperatorConfigValidator) check(ctx context.Context, cl Cluster, key types.NamespacedName, doc any) (warnings, diag.List, error) {
	var w warnings
	cl = snapshotOf(cl)
	rs, n, why, err := publishedRules(ctx, cl, key, named([]any{doc}))
	if err != nil {
		return w, nil, err
	}
	if rs == nil {
		w.add(CapabilityUnavailable, "", "spec.capabilityRef.name", "%s: only the document's shape and version were checked ([OAR-CFG-1], [OAR-CFG-2], [OAR-CFG-3]); the rules it names are checked against the published rule set once there is one, and the controller reports them in status", why)
		return w, shapeOnly(doc), nil
	}
	_, errs := engine.Configure(rs, []any{doc})
	broken, err := withPending(ctx, cl, key, n, doc, errs, &w)
	if err != nil {
		return w, nil, err
	}
	return w, waiting(n, errs, broken, &w), nil
}

// withPending applies doc to the published rules with the rules it names of the packs
// bound to the Capability key but not published yet, n being the packs around them, and
// warns about each [OAR-CFG-5] (a mandatory rule disabled or downgraded) and
// [OAR-CFG-8] (a bare id made ambiguous) that only those rules cause, errs being what
// the published rules alone refuse: the configuration applies now, and stops applying
// once the controller publishes that pack. It returns the fields it warned about.
func withPending(ctx context.Context, cl Cluster, key types.NamespacedName, n *neighbours, doc any, errs diag.List, w *warnings) (map[string]bool, error) {
	names := named([]any{doc})
	packs := map[string]bool{}
	for q, pack := range n.owner {
		if _, published := n.publishedOwner[q]; !published && namedBy(q, names) {
			packs[pack] = true
		}
	}
	if len(packs) == 0 {
		return nil, nil
	}
	b, _, err := cl.Bundle(ctx, key)
	if err != nil || b == nil {
		return nil, err
	}
	bound, err := cl.RulePacks(ctx, key)
	if err != nil {
		return nil, err
	}
	var extra []any
	for i := range bound {
		if !packs[bound[i].Name] {
			continue
		}
		rules, qids, _, _ := decodeRules(bound[i].Spec.Rules)
		for j, q := range qids {
			if q != "" && n.owner[q] == bound[i].Name && namedBy(q, names) {
				extra = append(extra, rules[j])
			}
		}
	}
	rs, loadErrs := identities(b.Capability, n.published, names, extra...)
	if len(loadErrs) > 0 {
		return nil, nil
	}
	var broken map[string]bool
	refused := map[string]bool{}
	for _, e := range errs {
		refused[e.Clause+" "+e.Field] = true
	}
	_, all := engine.Configure(rs, []any{doc})
	for _, e := range all {
		if e.Clause != "OAR-CFG-5" && e.Clause != "OAR-CFG-8" || refused[e.Clause+" "+e.Field] {
			continue
		}
		pack, qid := pending(n, e.Rule)
		for _, q := range e.Related {
			if pack == "" {
				pack, qid = pending(n, q)
			}
		}
		if pack == "" {
			continue
		}
		if broken == nil {
			broken = map[string]bool{}
		}
		broken[e.Field] = true
		w.add(ConfigurationBreaks, e.Clause, diag.JoinPath("spec.config", e.Field), "%s, with rule %s of RulePack %q, which is not published yet: once the controller publishes that pack this configuration no longer applies, and the controller refuses this configuration, or holds that pack back (Conflict) if this configuration is published first", e.Message, qid, pack)
	}
	return broken, nil
}

func hasClause(l diag.List, clause string) bool {
	for _, e := range l {
		if e.Clause == clause {
			return true
		}
	}
	return false
}

// shapeOnly is what a configuration document gets without a rule set: everything it is
// told applied to no rules but that the rules it names are not loaded ([OAR-CFG-4]).
func shapeOnly(doc any) diag.List {
	var out diag.List
	_, errs := engine.Configure(noRules, []any{doc})
	for _, e := range errs {
		if e.Clause != "OAR-CFG-4" {
			out = append(out, e)
		}
	}
	return out
}

// waiting turns each [OAR-CFG-4] about a rule of a pack bound to the Capability but not
// published yet (n) into a warning — a GitOps sync may apply the configuration before
// the controller publishes the pack — and returns the rest. The fields in broken were
// warned about already (withPending): the pack, once published, does not let the
// configuration apply.
func waiting(n *neighbours, errs diag.List, broken map[string]bool, w *warnings) diag.List {
	var rest diag.List
	for _, e := range errs {
		if e.Clause == "OAR-CFG-4" {
			if pack, qid := pending(n, e.Rule); pack != "" {
				if broken[e.Field] {
					continue
				}
				w.add(RuleNotPublished, e.Clause, diag.JoinPath("spec.config", e.Field), "rule %s is in RulePack %q, which is not published yet; the controller applies this configuration once it is", qid, pack)
				continue
			}
		}
		rest = append(rest, e)
	}
	return rest
}

// publishedRules returns the rules of the bundle published for the Capability key that a
// configuration naming names may mean, as identities — all a configuration applies to —
// and the packs around them, or says why there is none. The Capability and the bundle
// are read first: without them only the document's shape is judged, and nothing else is
// read. The rules are those of n.published, the packs of the bundle that are still
// incumbents (readIncumbents): the controller leaves the published generation of a pack
// deleted, being deleted, bound elsewhere or created again out of the next bundle, and
// with it a configuration naming only its rules ([OAR-CFG-4]), even while a bundle held
// back still serves it. The published configurations are not read: a configuration is
// judged against the packs alone.
func publishedRules(ctx context.Context, cl Cluster, key types.NamespacedName, names map[string]bool) (*engine.RuleSet, *neighbours, string, error) {
	capability, err := cl.Capability(ctx, key)
	if err != nil || capability == nil {
		return nil, nil, fmt.Sprintf("Capability %q does not exist", key.Name), err
	}
	b, _, err := cl.Bundle(ctx, key)
	if err != nil || b == nil {
		return nil, nil, fmt.Sprintf("nothing is published for Capability %q yet", key.Name), err
	}
	n, err := loadNeighbours(ctx, cl, key, "", "", packsOnly)
	if err != nil {
		return nil, nil, "", err
	}
	rs, errs := identities(b.Capability, n.published, names)
	if len(errs) > 0 {
		return nil, nil, fmt.Sprintf("the bundle published for Capability %q does not load (%s)", key.Name, detail(errs[0])), nil
	}
	return rs, n, "", nil
}

// identities loads, against the published capability document, the identities of the
// rules of packs, published generations, that names may mean, and of the rules extra.
func identities(capability map[string]any, packs []publishedPack, names map[string]bool, extra ...any) (*engine.RuleSet, diag.List) {
	c, errs := engine.LoadCapability(capability)
	if len(errs) > 0 {
		return nil, errs
	}
	anchor := stubAnchor(c)
	var docs []any
	for _, p := range packs {
		for j, r := range p.Rules {
			if namedBy(p.qids[j], names) {
				docs = append(docs, identity(r, anchor))
			}
		}
	}
	for _, r := range extra {
		docs = append(docs, identity(r, anchor))
	}
	return engine.LoadRules(c, docs)
}

// pending returns the pack, not published, that defines the rule a configuration names
// as ref, and the rule's qualified identifier (the first such rule by identifier); ""
// when there is none.
func pending(n *neighbours, ref string) (pack, qid string) {
	if strings.Contains(ref, "/") {
		if p, ok := n.owner[ref]; ok {
			if _, published := n.publishedOwner[ref]; !published {
				return p, ref
			}
		}
		return "", ""
	}
	if n.pendingByID == nil {
		// Made once: a configuration may name thousands of rules the set lacks, each
		// looked up here, and going through every rule of every pack for each cost the
		// product of the two.
		n.pendingByID = map[string]pendingRule{}
		for q, p := range n.owner {
			if _, published := n.publishedOwner[q]; published {
				continue
			}
			if cur, ok := n.pendingByID[idOf(q)]; !ok || q < cur.qid {
				n.pendingByID[idOf(q)] = pendingRule{pack: p, qid: q}
			}
		}
	}
	r := n.pendingByID[ref]
	return r.pack, r.qid
}

// pendingRule is a rule of a pack not published yet (pending).
type pendingRule struct{ pack, qid string }

// configErrors renders diagnostics about a configuration document under spec.config.
func configErrors(errs diag.List) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		out[i] = fieldError(diag.JoinPath("spec.config", e.Field), e)
	}
	return out
}
