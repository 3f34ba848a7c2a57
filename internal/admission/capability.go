package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// CapabilityValidator admits a valid capability document ([OAR-FACT-24]) and refuses an
// update that would make what is published for it stop loading: a shrinking capability
// would silently drop enforcement, so it fails closed.
type CapabilityValidator struct {
	Cluster Cluster
}

var _ admission.Validator[*rulesv1alpha1.Capability] = &CapabilityValidator{}

// ValidateCreate implements admission.Validator: packs already naming the Capability
// that do not load against it are warned about (nothing was enforced for it yet).
func (v *CapabilityValidator) ValidateCreate(ctx context.Context, c *rulesv1alpha1.Capability) (admission.Warnings, error) {
	w, err := v.create(ctx, c)
	return w.response(), err
}

// create is ValidateCreate with every warning and its kind.
func (v *CapabilityValidator) create(ctx context.Context, c *rulesv1alpha1.Capability) (warnings, error) {
	if errs := capabilityNameErrors("metadata.name", c.Name); len(errs) > 0 {
		return nil, invalid(capabilityKind, c.Name, errs)
	}
	capability, err := loadCapabilityDocument(c)
	if err != nil {
		return nil, err
	}
	var w warnings
	if err := v.warnUnsatisfied(ctx, c, capability, nil, nil, &w); err != nil {
		return nil, err
	}
	return w, nil
}

// ValidateUpdate implements admission.Validator: an unchanged spec is admitted as is; a
// changed one must keep every published pack and configuration loading.
func (v *CapabilityValidator) ValidateUpdate(ctx context.Context, old, c *rulesv1alpha1.Capability) (admission.Warnings, error) {
	if apiequality.Semantic.DeepEqual(old.Spec, c.Spec) {
		return nil, nil
	}
	capability, err := loadCapabilityDocument(c)
	if err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	published, uids, err := v.Cluster.Bundle(ctx, key)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if published != nil {
		trial, err := v.stillPublished(ctx, key, published, uids)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		trial.Capability = capability.Document()
		var le *bundle.LoadError
		if _, err := bundle.Load(trial); errors.As(err, &le) {
			return nil, invalid(capabilityKind, c.Name, breakage(le, published.Capability, capability))
		}
	}
	var w warnings
	if err := v.warnUnsatisfied(ctx, c, capability, published, uids, &w); err != nil {
		return nil, err
	}
	return w.response(), nil
}

// ValidateDelete implements admission.Validator; deletes are not sent to this webhook.
func (v *CapabilityValidator) ValidateDelete(context.Context, *rulesv1alpha1.Capability) (admission.Warnings, error) {
	return nil, nil
}

// stillPublished is what of the bundle published for the Capability key its next
// bundle can keep, whatever the capability document: the packs that are still
// incumbents under the published document (readIncumbents), and the configurations that
// apply to them. The controller leaves the rest out because they are gone, not because
// of a new document, so they take no part in judging one. A configuration whose object
// is gone is kept: the configurations apply to the packs whatever the document, once
// they load, so only the packs decide.
func (v *CapabilityValidator) stillPublished(ctx context.Context, key types.NamespacedName, published *bundle.Bundle, uids *resource.PublishedUIDs) (*bundle.Bundle, error) {
	live, err := v.Cluster.RulePacks(ctx, key)
	if err != nil {
		return nil, err
	}
	in, err := readIncumbents(ctx, v.Cluster, key, published, uids, live, "", "", packsOnly)
	if err != nil {
		return nil, err
	}
	return &bundle.Bundle{Packs: in.packs(published), Configs: in.configs}, nil
}

// loadCapabilityDocument loads the Capability's document, refusing an invalid one with
// one cause per diagnostic at spec.<field>.
func loadCapabilityDocument(c *rulesv1alpha1.Capability) (*engine.Capability, error) {
	doc, err := resource.CapabilityDocument(c)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	capability, errs := engine.LoadCapability(doc)
	if len(errs) > 0 {
		causes := make(field.ErrorList, len(errs))
		for i, e := range errs {
			causes[i] = fieldError(diag.JoinPath("spec", e.Field), e)
		}
		return nil, invalid(capabilityKind, c.Name, causes)
	}
	return capability, nil
}

// breakage renders why what is published under the document before would stop loading
// under capability, in the words the controller uses when the update reaches it without
// this webhook (bundle.Breakage), each at the member of the capability whose narrowing
// broke it.
func breakage(le *bundle.LoadError, before map[string]any, capability *engine.Capability) field.ErrorList {
	published, _ := engine.LoadCapability(before) // nil when invalid: Breakage then goes by clause alone
	causes := make(field.ErrorList, len(le.Errors))
	for i, e := range bundle.Breakage(le, published, capability) {
		causes[i] = fieldError(e.Field, e)
	}
	return causes
}

// warnUnsatisfied warns about each pack naming the Capability, other than the published
// ones, that does not load against it (stubs standing for the other packs' rules). A
// pack is the published one when its generation is and uids do not say the name was
// published for another object: one created again under the name is at generation 1
// again, and a newcomer.
func (v *CapabilityValidator) warnUnsatisfied(ctx context.Context, c *rulesv1alpha1.Capability, capability *engine.Capability, published *bundle.Bundle, uids *resource.PublishedUIDs, w *warnings) error {
	packs, err := v.Cluster.RulePacks(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Name})
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	publishedGeneration := map[string]int64{}
	if published != nil {
		for _, p := range published.Packs {
			publishedGeneration[p.Name] = p.Generation
		}
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].Name < packs[j].Name })
	rules, qids := make([][]any, len(packs)), make([][]string, len(packs))
	defined := map[string]bool{}
	for i := range packs {
		rules[i], qids[i], _, _ = decodeRules(packs[i].Spec.Rules)
		maps.Copy(defined, idSet(qids[i]))
	}
	anchor := stubAnchor(capability)
	for i, p := range packs {
		if g, ok := publishedGeneration[p.Name]; ok && g == p.Generation && !uids.NewPack(p.Name, p.UID) {
			continue
		}
		docs := append(slices.Clip(rules[i]), stubs(defined, idSet(qids[i]), anchor)...)
		if errs := engine.CheckRules(capability, docs); len(errs) > 0 {
			e := errs[0]
			w.add(PackDoesNotLoad, e.Clause, fmt.Sprintf("RulePack %q %s", p.Name, rulePath(e.Index, e.Field)),
				"%s (rule %s)%s; the pack does not load against this capability", e.Message, ruleName(e, rules[i]), more(len(errs)-1))
		}
	}
	return nil
}

// more counts further problems for a warning that shows the first.
func more(n int) string {
	if n == 0 {
		return ""
	}
	return " and " + count(n, "more problem")
}
