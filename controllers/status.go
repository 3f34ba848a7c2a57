package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// statusWriters bounds the status writes in flight. The API server handles them in
// parallel and etcd batches their commits, so 200 packs' statuses take a fraction of
// the time one-by-one writes would.
const statusWriters = 16

// updateStatuses writes what happened to every resource of one Capability, writing
// only what changed so a restart with nothing new writes nothing.
func (r *BundleReconciler) updateStatuses(ctx context.Context, key types.NamespacedName, capability *rulesv1alpha1.Capability,
	packs []rulesv1alpha1.RulePack, configs []rulesv1alpha1.OperatorConfig, res *bundle.Result, cm *corev1.ConfigMap) error {
	ref := bundleRef(cm)
	serving := servingOf(res, cm)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(statusWriters)
	for i := range packs {
		p := &packs[i]
		o, ok := res.Packs[p.Name]
		if !p.DeletionTimestamp.IsZero() {
			o, ok = deleting("rule pack", serving.pack(p.Name, p.UID)), true
		}
		if !ok {
			continue
		}
		st := p.Status.DeepCopy()
		st.ObservedGeneration = p.Generation
		st.RuleCount = int32(len(p.Spec.Rules))
		st.LoadErrors = loadErrors(o.Errors, "spec.rules")
		st.PublishedGeneration = generationPtr(o.PublishedGeneration)
		st.Bundle = nil
		if o.PublishedGeneration > 0 {
			st.Bundle = ref
		}
		st.Portability, st.Warnings = packReport(res, p.Name, o.Published)
		setConditions(&st.Conditions, p.Generation, o, "rule pack")
		g.Go(func() error { return r.writeStatus(ctx, key, p, &p.Status, st, func() { p.Status = *st }) })
	}
	for i := range configs {
		c := &configs[i]
		o, ok := res.Configs[c.Name]
		if !c.DeletionTimestamp.IsZero() {
			o, ok = deleting("configuration", serving.config(c.Name, c.UID)), true
		}
		if !ok {
			continue
		}
		st := c.Status.DeepCopy()
		st.ObservedGeneration = c.Generation
		st.LoadErrors = loadErrors(o.Errors, "spec.config")
		st.PublishedGeneration = generationPtr(o.PublishedGeneration)
		setConditions(&st.Conditions, c.Generation, o, "configuration")
		g.Go(func() error { return r.writeStatus(ctx, key, c, &c.Status, st, func() { c.Status = *st }) })
	}
	if capability != nil {
		st := capabilityStatus(capability, res, ref)
		g.Go(func() error {
			return r.writeStatus(ctx, key, capability, &capability.Status, st, func() { capability.Status = *st })
		})
	}
	return g.Wait()
}

// writeStatus updates obj's status to next unless it equals both current (the
// informer's copy) and the status last written to obj (writtenStatuses), emitting an
// event when the Ready condition changes.
func (r *BundleReconciler) writeStatus(ctx context.Context, key types.NamespacedName, obj client.Object, current, next any, apply func()) error {
	if last, ok := r.written.get(key, obj.GetUID()); equality.Semantic.DeepEqual(current, next) && (!ok || equality.Semantic.DeepEqual(last, next)) {
		return nil
	}
	before := readyOf(current)
	apply()
	if err := r.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("update status of %s: %w", obj.GetName(), err)
	}
	r.written.set(key, obj.GetUID(), statusCopy(current))
	if after := readyOf(next); after != nil && (before == nil || before.Status != after.Status || before.Reason != after.Reason) {
		kind := corev1.EventTypeNormal
		if after.Status != metav1.ConditionTrue {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(obj, nil, kind, after.Reason, "Reconcile", "%s", after.Message)
	}
	return nil
}

// statusCopy copies a status, as Update left it: the API server's answer.
func statusCopy(status any) any {
	switch s := status.(type) {
	case *rulesv1alpha1.RulePackStatus:
		return s.DeepCopy()
	case *rulesv1alpha1.OperatorConfigStatus:
		return s.DeepCopy()
	case *rulesv1alpha1.CapabilityStatus:
		return s.DeepCopy()
	}
	panic(fmt.Sprintf("statusCopy: unexpected status type %T", status))
}

func readyOf(status any) *metav1.Condition {
	var conds []metav1.Condition
	switch s := status.(type) {
	case *rulesv1alpha1.RulePackStatus:
		conds = s.Conditions
	case *rulesv1alpha1.OperatorConfigStatus:
		conds = s.Conditions
	case *rulesv1alpha1.CapabilityStatus:
		conds = s.Conditions
	}
	return meta.FindStatusCondition(conds, rulesv1alpha1.ConditionReady)
}

// serving is the bundle ConfigMap cm serves, res.Bundle, and whose generations it
// holds.
type serving struct {
	bundle *bundle.Bundle
	ids    *resource.PublishedUIDs
}

// servingOf is what serves after a reconcile that left res and cm (nil when no bundle
// serves).
func servingOf(res *bundle.Result, cm *corev1.ConfigMap) serving {
	if cm == nil || res.Bundle == nil {
		return serving{}
	}
	return serving{res.Bundle, identitiesOf(cm)}
}

// pack is the generation of the RulePack name, object uid, the bundle serves; 0 when
// none, or when the generation under its name is another object's.
func (s serving) pack(name string, uid types.UID) int64 {
	if s.bundle == nil || s.ids.NewPack(name, uid) {
		return 0
	}
	for _, p := range s.bundle.Packs {
		if p.Name == name {
			return p.Generation
		}
	}
	return 0
}

// config is pack for an OperatorConfig.
func (s serving) config(name string, uid types.UID) int64 {
	if s.bundle == nil || s.ids.NewConfig(name, uid) {
		return 0
	}
	for _, c := range s.bundle.Configs {
		if c.Name == name {
			return c.Generation
		}
	}
	return 0
}

// deleting is the outcome of a resource being deleted: assembly leaves it out (input),
// but a bundle held back (a narrowed or invalid capability) still serves served, its
// generation, until the hold clears and the next bundle is published without it.
func deleting(what string, served int64) bundle.Outcome {
	o := bundle.Outcome{Reason: rulesv1alpha1.ReasonDeleting, PublishedGeneration: served,
		Message: fmt.Sprintf("the %s is being deleted, so it is left out of the bundle; its finalizers hold it until they are removed", what)}
	if served > 0 {
		o.Message = fmt.Sprintf("the %s is being deleted; the bundle serving is held back (the Capability's status says why) and still holds it, "+
			"so it leaves the bundle once the hold clears; its finalizers hold it until they are removed", what)
	}
	return o
}

// setConditions turns an assembly outcome into Ready and Accepted. Accepted answers
// whether the document loads on its own; Ready whether its current generation serves.
func setConditions(conds *[]metav1.Condition, generation int64, o bundle.Outcome, what string) {
	accepted := metav1.Condition{Type: rulesv1alpha1.ConditionAccepted, ObservedGeneration: generation}
	ready := metav1.Condition{Type: rulesv1alpha1.ConditionReady, ObservedGeneration: generation}
	switch o.Reason {
	case "":
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, fmt.Sprintf("the %s loads against its Capability", what)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonPublished,
			fmt.Sprintf("generation %d is published in the bundle", generation)
	case bundle.ReasonLoadFailed:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, o.Reason, o.Message
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, o.Reason, servingNote(o)
	case rulesv1alpha1.ReasonDeleting:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionUnknown, o.Reason, fmt.Sprintf("the %s is being deleted; it is no longer checked", what)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, o.Reason, servingNote(o)
	case bundle.ReasonCapabilityMissing, bundle.ReasonCapabilityInvalid, bundle.ReasonCapabilityNarrowed, rulesv1alpha1.ReasonBundleNameTaken:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionUnknown, o.Reason, o.Message
		if len(o.Errors) > 0 { // a narrowed capability this one would stop loading against
			accepted.Status = metav1.ConditionFalse
		}
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, o.Reason, servingNote(o)
	default: // Conflict, BundleTooLarge: the document is fine alone.
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, fmt.Sprintf("the %s loads against its Capability on its own", what)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, o.Reason, servingNote(o)
	}
	meta.SetStatusCondition(conds, accepted)
	meta.SetStatusCondition(conds, ready)
}

// servingNote completes a failure message with what still serves.
func servingNote(o bundle.Outcome) string {
	msg := strings.TrimSuffix(o.Message, ".")
	if o.PublishedGeneration > 0 {
		return fmt.Sprintf("%s; generation %d still serves", msg, o.PublishedGeneration)
	}
	return msg + "; nothing of it is published"
}

func generationPtr(g int64) *int64 {
	if g == 0 {
		return nil
	}
	return &g
}

func bundleRef(cm *corev1.ConfigMap) *rulesv1alpha1.BundleReference {
	if cm == nil {
		return nil
	}
	return &rulesv1alpha1.BundleReference{ConfigMapName: cm.Name, Digest: cm.Annotations[resource.DigestAnnotation]}
}

// loadErrors renders engine diagnostics as status entries whose field is the path into
// the resource, spelled as the webhook spells it.
func loadErrors(errs diag.List, prefix string) []rulesv1alpha1.LoadError {
	if len(errs) == 0 {
		return nil
	}
	n := min(len(errs), rulesv1alpha1.MaxLoadErrors)
	out := make([]rulesv1alpha1.LoadError, 0, n)
	for _, e := range errs[:n] {
		field := prefix
		if e.Index >= 0 && prefix == "spec.rules" {
			field = fmt.Sprintf("%s[%d]", prefix, e.Index)
		}
		le := rulesv1alpha1.LoadError{
			Rule:       e.Rule,
			Index:      int32(e.Index),
			Clause:     e.Clause,
			Field:      diag.JoinPath(field, e.Field),
			Value:      truncate(e.Value, rulesv1alpha1.MaxLoadErrorValueLength),
			Message:    e.Message,
			Suggestion: e.Suggestion,
		}
		if e.Offset >= 0 {
			off := int64(e.Offset)
			le.Offset = &off
		}
		out = append(out, le)
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// packReport is a pack's portability summary and load warnings, from the bundle as
// loaded; nil when the pack's current generation is not in it.
func packReport(res *bundle.Result, pack string, published bool) (*rulesv1alpha1.PortabilitySummary, []string) {
	if !published || res.Loaded == nil {
		return nil, nil
	}
	rs := res.Loaded.RuleSet
	sum := &rulesv1alpha1.PortabilitySummary{}
	for i, r := range rs.Rules {
		if res.Loaded.RuleOwner[i] != pack {
			continue
		}
		p := rs.Portability(r)
		if p.Portable {
			sum.Portable++
			continue
		}
		sum.NonPortable++
		if len(sum.Rules) < rulesv1alpha1.MaxPortabilityRules {
			sum.Rules = append(sum.Rules, rulesv1alpha1.RulePortability{Rule: p.Rule, Reasons: p.Reasons})
		}
	}
	var warnings []string
	for _, w := range rs.Warnings {
		if w.Index >= 0 && w.Index < len(res.Loaded.RuleOwner) && res.Loaded.RuleOwner[w.Index] == pack && len(warnings) < rulesv1alpha1.MaxWarnings {
			warnings = append(warnings, w.Error())
		}
	}
	return sum, warnings
}

// capabilityStatus says whether the capability document is valid and which bundle
// serves it.
func capabilityStatus(c *rulesv1alpha1.Capability, res *bundle.Result, ref *rulesv1alpha1.BundleReference) *rulesv1alpha1.CapabilityStatus {
	st := c.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.LoadErrors = loadErrors(res.CapabilityErrors, "spec")
	if len(res.Narrowing) > 0 {
		st.LoadErrors = loadErrors(res.Narrowing, "")
	}
	st.Bundle = ref
	st.Packs, st.Configs, st.RuleCount = nil, nil, 0
	if b := res.Bundle; b != nil {
		for _, p := range b.Packs {
			st.Packs = append(st.Packs, p.Name)
			st.RuleCount += int32(len(p.Rules))
		}
		for _, cfg := range b.Configs {
			st.Configs = append(st.Configs, cfg.Name)
		}
	}
	accepted := metav1.Condition{Type: rulesv1alpha1.ConditionAccepted, ObservedGeneration: c.Generation}
	ready := metav1.Condition{Type: rulesv1alpha1.ConditionReady, ObservedGeneration: c.Generation}
	var held []string
	for _, name := range sortedKeys(res.Packs) {
		if res.Packs[name].Reason == bundle.ReasonBundleTooLarge {
			held = append(held, name)
		}
	}
	for _, name := range sortedKeys(res.Configs) {
		if res.Configs[name].Reason == bundle.ReasonBundleTooLarge {
			held = append(held, "configuration "+name)
		}
	}
	unmet, unmetWhy := unmetPacks(res)
	switch {
	case len(res.CapabilityErrors) > 0:
		accepted.Status, accepted.Reason = metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityInvalid
		accepted.Message = fmt.Sprintf("the capability document is invalid: %s", res.CapabilityErrors[0].Format("spec"))
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityInvalid,
			"nothing new is published until the capability document is valid; the current bundle, if any, stays"
	case ref == nil:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, "the capability document is valid"
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, rulesv1alpha1.ReasonPending, "the bundle is not published yet"
	case len(res.Held) > 0:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, "the capability document is valid"
		ready.Status, ready.Reason = metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed
		ready.Message = fmt.Sprintf("generation %d is held back: it would make %s stop loading%s; bundle %s of the previous generation keeps serving "+
			"until the capability provides what they need again, or they load against it", c.Generation, strings.Join(res.Held, ", "), summary(res.Narrowing), ref.Digest)
	case len(held) > 0:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, "the capability document is valid"
		ready.Status, ready.Reason = metav1.ConditionFalse, rulesv1alpha1.ReasonBundleTooLarge
		ready.Message = fmt.Sprintf("bundle %s is published, but %s held back: the bundle would exceed its size limits", ref.Digest, strings.Join(held, ", ")+plural(len(held), " is", " are"))
	case len(res.Dropped) > 0:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, "the capability document is valid"
		ready.Status, ready.Reason = metav1.ConditionFalse, rulesv1alpha1.ReasonLeftOut
		n := len(res.Dropped)
		names := make([]string, n)
		for i, d := range res.Dropped {
			names[i] = d.String()
		}
		ready.Message = fmt.Sprintf("bundle %s is published without %s, which an earlier bundle published: %s no longer %s with the packs published "+
			"(%s status says why), so what %s enforced no longer holds, and that may be looser (a configuration may raise rules to enforce); "+
			"this lasts until %s published again: restore what %s, or change or delete %s",
			ref.Digest, strings.Join(names, ", "), plural(n, "it", "they"), plural(n, "loads or applies", "load or apply"),
			plural(n, "its", "their"), plural(n, "it", "they"), plural(n, "it is", "they are"), plural(n, "it names", "they name"), plural(n, "it", "them"))
	case len(unmet) > 0:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, "the capability document is valid"
		ready.Status, ready.Reason = metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityNarrowed
		ready.Message = fmt.Sprintf("bundle %s is published without %s: the capability does not provide what %s%s; there was no published generation of %s to keep",
			ref.Digest, strings.Join(unmet, ", "), plural(len(unmet), "it needs", "they need"), summary(unmetWhy), plural(len(unmet), "it", "them"))
	default:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, rulesv1alpha1.ReasonLoaded, "the capability document is valid"
		ready.Status, ready.Reason = metav1.ConditionTrue, rulesv1alpha1.ReasonPublished
		ready.Message = fmt.Sprintf("bundle %s is published in ConfigMap %s", ref.Digest, ref.ConfigMapName)
	}
	meta.SetStatusCondition(&st.Conditions, accepted)
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}

// unmetPacks names the packs of which nothing serves because the capability does not
// provide what they need (a diagnostic one of its members decides), with the first such
// diagnostic of each. This is what a narrowed capability leaves out when there was no
// bundle to keep; the Capability is not Ready while it lasts.
func unmetPacks(res *bundle.Result) ([]string, diag.List) {
	var names []string
	var why diag.List
	for _, name := range sortedKeys(res.Packs) {
		o := res.Packs[name]
		if o.PublishedGeneration > 0 || o.Reason != bundle.ReasonLoadFailed {
			continue
		}
		for _, e := range o.Errors {
			if e.Index >= 0 && bundle.CapabilityMember(e) != "spec" {
				names = append(names, fmt.Sprintf("RulePack %q", name))
				cp := *e
				cp.Field = bundle.RulePath(e.Index, e.Field)
				why = append(why, &cp)
				break
			}
		}
	}
	return names, why
}

// summaryShown bounds the diagnostics a condition message spells out.
const summaryShown = 3

// summary renders the first diagnostics of l and counts the rest, after a colon; "" when
// l is empty.
func summary(l diag.List) string {
	if len(l) == 0 {
		return ""
	}
	var parts []string
	for _, e := range l[:min(len(l), summaryShown)] {
		parts = append(parts, e.Error())
	}
	if len(l) > summaryShown {
		parts = append(parts, fmt.Sprintf("and %d more", len(l)-summaryShown))
	}
	return ": " + strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
