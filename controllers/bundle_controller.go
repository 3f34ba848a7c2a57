package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// capabilityRefField indexes RulePacks and OperatorConfigs by the Capability they name.
const capabilityRefField = ".spec.capabilityRef.name"

// BundleReconciler publishes one bundle per Capability and reports, on the Capability
// and on every RulePack and OperatorConfig naming it, exactly what happened. One
// reconcile handles one Capability name, existing or not, so a pack naming a missing
// Capability is told so.
type BundleReconciler struct {
	client.Client
	// APIReader reads past the cache (the manager's GetAPIReader), which holds only the
	// ConfigMaps labelled as bundles (resource.CacheOptions): see bundleConfigMap.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  recorder.EventRecorder
	// Concurrency is how many Capabilities are reconciled at once (at least one). A
	// Capability whose bundle is slow to assemble then holds up only itself: what the
	// reconciler keeps between reconciles is kept per Capability, under a lock, and two
	// reconciles of one Capability never run at once.
	Concurrency int

	decoded decodedPacks
	changes changeCounter
	last    lastPublished
	written writtenStatuses
}

// Reconcile assembles and publishes the bundle of the Capability req names.
func (r *BundleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("capability", req.NamespacedName)
	ctx = log.IntoContext(ctx, logger)
	seen := r.changes.get(req.NamespacedName)

	var capability *rulesv1alpha1.Capability
	c := &rulesv1alpha1.Capability{}
	switch err := r.Get(ctx, req.NamespacedName, c); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get capability: %w", err)
	case !c.DeletionTimestamp.IsZero():
	default:
		capability = c
	}

	var packs rulesv1alpha1.RulePackList
	if err := r.List(ctx, &packs, client.InNamespace(req.Namespace), client.MatchingFields{capabilityRefField: req.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list rule packs: %w", err)
	}
	var configs rulesv1alpha1.OperatorConfigList
	if err := r.List(ctx, &configs, client.InNamespace(req.Namespace), client.MatchingFields{capabilityRefField: req.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list operator configs: %w", err)
	}

	r.written.retain(req.NamespacedName, uidsOf(capability, packs.Items, configs.Items))

	cm, err := r.bundleConfigMap(ctx, types.NamespacedName{Namespace: req.Namespace, Name: resource.BundleName(req.Name)})
	if err != nil {
		return ctrl.Result{}, err
	}
	if cm != nil && !resource.OperatorBundle(cm, req.Name, capability) {
		if err := r.refuseForeignConfigMap(ctx, req.NamespacedName, capability, packs.Items, configs.Items, cm); err != nil {
			return ctrl.Result{}, err
		}
		return recheckForeign(capability, packs.Items, configs.Items), nil
	}

	onCM := r.intactBundle(ctx, cm)
	last, ok := r.last.get(req.NamespacedName)
	if !ok {
		last = publication{onCM, identitiesOf(cm), leftOutOf(cm)}
		if onCM == nil {
			last.ids = nil
		}
	}
	current := last.bundle
	in, livePacks, liveConfigs, err := r.input(req.NamespacedName, capability, packs.Items, configs.Items, current)
	if err != nil {
		return ctrl.Result{}, err
	}
	markNewIdentities(last.ids, &in, livePacks, liveConfigs)
	in.LeftOut = stillLeftOut(last.leftOut, livePacks, liveConfigs)
	res, err := bundle.Assemble(in)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("assemble bundle: %w", err)
	}
	next := publication{res.Bundle, identitiesFor(res, last.ids, livePacks, liveConfigs), leftOutIdentities(res.Dropped, livePacks, liveConfigs)}

	published := cm
	switch {
	case capability == nil:
		if err := r.deleteBundle(ctx, cm); err != nil {
			return ctrl.Result{}, err
		}
		r.last.forget(req.NamespacedName)
		published = nil
		nothingServes(res)
	case res.Bundle != nil && (!holds(cm, onCM, res.Bundle.Digest) || !metav1.IsControlledBy(cm, capability) || !ownedBy(cm, capability.Name) ||
		cm.Annotations[resource.PublishedUIDsAnnotation] != next.ids.Encode() || cm.Annotations[resource.LeftOutUIDsAnnotation] != leftOutValue(next.leftOut)):
		if published, err = r.writeBundle(ctx, capability, cm, res, next); err != nil {
			return ctrl.Result{}, err
		}
		if current != nil && current != onCM && !holds(cm, onCM, current.Digest) {
			r.Recorder.Eventf(capability, published, corev1.EventTypeWarning, "BundleRestored", "Publish",
				"ConfigMap %s no longer held bundle %s (deleted or overwritten); the bundle is published again from the operator's copy", published.Name, current.Digest)
		}
		r.last.set(req.NamespacedName, next)
	case res.Bundle != nil:
		r.last.set(req.NamespacedName, next)
	}
	if r.changes.deferStatus(req.NamespacedName, seen, time.Now()) {
		logger.V(1).Info("more changes are queued; their reconcile writes the statuses")
		return ctrl.Result{}, nil
	}
	if capability == nil && len(packs.Items) == 0 && len(configs.Items) == 0 {
		r.decoded.forget(req.NamespacedName)
	}
	return ctrl.Result{}, r.updateStatuses(ctx, req.NamespacedName, capability, packs.Items, configs.Items, res, published)
}

// bundleConfigMap reads the ConfigMap under a Capability's bundle name, nil when there
// is none. The cache holds only ConfigMaps labelled as bundles, so when it has none the
// API server is asked: a ConfigMap without those labels — someone else's, to be left
// alone and reported (refuseForeignConfigMap), or the Capability's own bundle whose
// labels were removed, to be healed — must not be taken for an absent one.
func (r *BundleReconciler) bundleConfigMap(ctx context.Context, key types.NamespacedName) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, cm)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get bundle configmap %s: %w", key.Name, err)
	}
	return cm, nil
}

// foreignRecheck is how often the name of a refused bundle is read again. A ConfigMap
// without the bundle labels is not in the cache, so its removal is no event.
const foreignRecheck = 10 * time.Second

// recheckForeign reconciles a name whose bundle ConfigMap is foreign again after
// foreignRecheck while there is a Capability, pack or configuration to report to, so
// removing that ConfigMap publishes the bundle.
func recheckForeign(capability *rulesv1alpha1.Capability, packs []rulesv1alpha1.RulePack, configs []rulesv1alpha1.OperatorConfig) ctrl.Result {
	if capability == nil && len(packs) == 0 && len(configs) == 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: foreignRecheck}
}

// uidsOf returns the UIDs of the objects one reconcile reports on.
func uidsOf(capability *rulesv1alpha1.Capability, packs []rulesv1alpha1.RulePack, configs []rulesv1alpha1.OperatorConfig) map[types.UID]bool {
	uids := map[types.UID]bool{}
	if capability != nil {
		uids[capability.UID] = true
	}
	for i := range packs {
		uids[packs[i].UID] = true
	}
	for i := range configs {
		uids[configs[i].UID] = true
	}
	return uids
}

// nothingServes clears the generation each outcome says serves: the bundle is gone,
// whatever it held.
func nothingServes(res *bundle.Result) {
	for name, o := range res.Packs {
		o.PublishedGeneration = 0
		res.Packs[name] = o
	}
	for name, o := range res.Configs {
		o.PublishedGeneration = 0
		res.Configs[name] = o
	}
}

// intactBundle is the bundle cm holds, or nil when there is no ConfigMap or its data is
// not an intact bundle (its digest does not match its content).
func (r *BundleReconciler) intactBundle(ctx context.Context, cm *corev1.ConfigMap) *bundle.Bundle {
	if cm == nil {
		return nil
	}
	b, err := bundle.Decode(cm.Data, cm.BinaryData)
	if err != nil {
		log.FromContext(ctx).Info("the bundle ConfigMap does not hold an intact bundle", "configmap", cm.Name, "error", err.Error())
		return nil
	}
	return b
}

// holds reports whether cm, holding onCM (intactBundle), serves the bundle of digest,
// annotation included. Whether the Capability controls it (by UID: a Capability deleted
// and created again under its name is another object) is checked apart.
func holds(cm *corev1.ConfigMap, onCM *bundle.Bundle, digest string) bool {
	return cm != nil && onCM != nil && onCM.Digest == digest && cm.Annotations[resource.DigestAnnotation] == digest
}

// input gathers the cluster state for one Capability; current is the bundle published
// so far, whose packs are the incumbents.
// It returns the packs and configurations not being deleted, in the order of in's.
func (r *BundleReconciler) input(key types.NamespacedName, capability *rulesv1alpha1.Capability, packs []rulesv1alpha1.RulePack,
	configs []rulesv1alpha1.OperatorConfig, current *bundle.Bundle) (bundle.Input, []*rulesv1alpha1.RulePack, []*rulesv1alpha1.OperatorConfig, error) {
	in := bundle.Input{Current: current}
	if capability != nil {
		doc, err := resource.CapabilityDocument(capability)
		if err != nil {
			return in, nil, nil, err
		}
		in.Capability = doc
	}
	live := make([]*rulesv1alpha1.RulePack, 0, len(packs))
	for i := range packs {
		if packs[i].DeletionTimestamp.IsZero() {
			live = append(live, &packs[i])
		}
	}
	in.Packs = r.decoded.inputs(key, live)
	var liveConfigs []*rulesv1alpha1.OperatorConfig
	for i := range configs {
		if c := &configs[i]; c.DeletionTimestamp.IsZero() {
			in.Configs = append(in.Configs, resource.AssemblyConfig(c))
			liveConfigs = append(liveConfigs, c)
		}
	}
	return in, live, liveConfigs, nil
}

// ownedBy reports whether cm is the bundle this operator wrote for the named Capability.
func ownedBy(cm *corev1.ConfigMap, capability string) bool {
	return resource.LabelledBundle(cm, capability)
}

// refuseForeignConfigMap leaves a ConfigMap the operator did not write alone and says
// so: the Capability is Ready=False, BundleNameTaken (writeStatus sends the Warning
// Event), and it and its packs and configurations name no bundle of theirs, so the
// metrics read from them drop it too. Without a Capability its packs and configurations
// say CapabilityMissing, as they would without the ConfigMap. A ConfigMap the Capability
// controls is its own even when its labels were removed (the next write restores them).
// Once the foreign ConfigMap is removed, the next reconcile (recheckForeign) publishes
// the last bundle this manager published again.
func (r *BundleReconciler) refuseForeignConfigMap(ctx context.Context, key types.NamespacedName, capability *rulesv1alpha1.Capability,
	packs []rulesv1alpha1.RulePack, configs []rulesv1alpha1.OperatorConfig, cm *corev1.ConfigMap) error {
	// Logged at V(1): while the name stays taken this runs at every recheck, and the
	// status and its Warning Event already say it.
	log.FromContext(ctx).V(1).Info("bundle ConfigMap name is taken by another object", "configmap", cm.Name)
	reason := rulesv1alpha1.ReasonBundleNameTaken
	why := fmt.Sprintf("ConfigMap %s exists and was not written by oar-operator: it is left alone and nothing is published until it is removed", cm.Name)
	if capability == nil {
		reason = bundle.ReasonCapabilityMissing
		why = fmt.Sprintf("the Capability it names does not exist, so no bundle is published for it (and ConfigMap %s, which oar-operator did not write, has its bundle's name)", cm.Name)
	}
	res := &bundle.Result{Packs: map[string]bundle.Outcome{}, Configs: map[string]bundle.Outcome{}}
	for _, p := range packs {
		res.Packs[p.Name] = bundle.Outcome{Reason: reason, Message: why}
	}
	for _, c := range configs {
		res.Configs[c.Name] = bundle.Outcome{Reason: reason, Message: why}
	}
	if err := r.updateStatuses(ctx, key, nil, packs, configs, res, nil); err != nil || capability == nil {
		return err
	}
	st := capability.Status.DeepCopy()
	st.ObservedGeneration = capability.Generation
	st.Bundle, st.Packs, st.Configs, st.RuleCount = nil, nil, nil, 0
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: rulesv1alpha1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: capability.Generation,
		Reason: rulesv1alpha1.ReasonBundleNameTaken, Message: why,
	})
	return r.writeStatus(ctx, key, capability, &capability.Status, st, func() { capability.Status = *st })
}

// writeBundle creates or updates the bundle ConfigMap, owned by the Capability, with
// the identities of what it publishes and of what it is published without (next).
func (r *BundleReconciler) writeBundle(ctx context.Context, capability *rulesv1alpha1.Capability, cm *corev1.ConfigMap,
	res *bundle.Result, next publication) (*corev1.ConfigMap, error) {
	if cm == nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: capability.Namespace, Name: resource.BundleName(capability.Name)}}
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[resource.ManagedByLabel] = resource.ManagedBy
	cm.Labels[resource.CapabilityLabel] = capability.Name
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[resource.DigestAnnotation] = res.Bundle.Digest
	cm.Annotations[resource.PublishedUIDsAnnotation] = next.ids.Encode()
	if v := leftOutValue(next.leftOut); v != "" {
		cm.Annotations[resource.LeftOutUIDsAnnotation] = v
	} else {
		delete(cm.Annotations, resource.LeftOutUIDsAnnotation)
	}
	cm.Data = res.Encoded.Data
	cm.BinaryData = res.Encoded.BinaryData
	if err := controllerutil.SetControllerReference(capability, cm, r.Scheme); err != nil {
		return nil, fmt.Errorf("own bundle configmap: %w", err)
	}
	var err error
	if cm.ResourceVersion == "" {
		err = r.Create(ctx, cm)
	} else {
		err = r.Update(ctx, cm)
	}
	if err != nil {
		return nil, fmt.Errorf("write bundle configmap %s: %w", cm.Name, err)
	}
	publications.WithLabelValues(capability.Namespace, capability.Name).Inc()
	r.Recorder.Eventf(capability, cm, corev1.EventTypeNormal, "Published", "Publish",
		"published bundle %s (%d packs, %d configurations, %d bytes%s) in ConfigMap %s",
		res.Bundle.Digest, len(res.Bundle.Packs), len(res.Bundle.Configs), res.Encoded.Size, compressedNote(res.Encoded), cm.Name)
	log.FromContext(ctx).Info("published bundle", "digest", res.Bundle.Digest, "packs", len(res.Bundle.Packs),
		"configs", len(res.Bundle.Configs), "bytes", res.Encoded.Size, "compressed", res.Encoded.Compressed)
	return cm, nil
}

func compressedNote(e bundle.Encoded) string {
	if e.Compressed {
		return ", gzip"
	}
	return ""
}

// deleteBundle removes the bundle of a Capability that no longer exists. Garbage
// collection would too, through the owner reference; deleting it here does not wait
// for it and keeps working where no garbage collector runs.
func (r *BundleReconciler) deleteBundle(ctx context.Context, cm *corev1.ConfigMap) error {
	if cm == nil {
		return nil
	}
	if err := r.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete bundle configmap %s: %w", cm.Name, err)
	}
	log.FromContext(ctx).Info("deleted the bundle of a deleted capability", "configmap", cm.Name)
	return nil
}

// SetupWithManager watches Capabilities, the packs and configurations naming them, and
// the bundles they own.
func (r *BundleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		return errors.New("the bundle controller needs an APIReader: its cache holds no ConfigMap without the bundle labels")
	}
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &rulesv1alpha1.RulePack{}, capabilityRefField, func(o client.Object) []string {
		return []string{o.(*rulesv1alpha1.RulePack).Spec.CapabilityRef.Name}
	}); err != nil {
		return fmt.Errorf("index rule packs: %w", err)
	}
	if err := idx.IndexField(ctx, &rulesv1alpha1.OperatorConfig{}, capabilityRefField, func(o client.Object) []string {
		return []string{o.(*rulesv1alpha1.OperatorConfig).Spec.CapabilityRef.Name}
	}); err != nil {
		return fmt.Errorf("index operator configs: %w", err)
	}
	// A status-only write bumps no generation; reacting to it would only re-read.
	specChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("bundle").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Concurrency, 1)}).
		For(&rulesv1alpha1.Capability{}, specChanged).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(foreignBundleNames)).
		Watches(&rulesv1alpha1.RulePack{}, r.enqueueCapabilities(), specChanged).
		Watches(&rulesv1alpha1.OperatorConfig{}, r.enqueueCapabilities(), specChanged).
		Complete(r)
}

// foreignBundleNames maps a ConfigMap that has a Capability's bundle name but no owner
// to that Capability: Owns does not see it. Only ConfigMaps with the bundle labels reach
// it (the cache holds no other): a bundle whose owner reference was removed, which the
// reconcile owns again. Unlabelled ones are read past the cache (bundleConfigMap).
func foreignBundleNames(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := strings.CutSuffix(o.GetName(), resource.BundleSuffix)
	if !ok || name == "" || metav1.GetControllerOf(o) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// capabilityRef returns the Capability a pack or configuration names.
func capabilityRef(o client.Object) string {
	switch v := o.(type) {
	case *rulesv1alpha1.RulePack:
		return v.Spec.CapabilityRef.Name
	case *rulesv1alpha1.OperatorConfig:
		return v.Spec.CapabilityRef.Name
	}
	return ""
}

// enqueueCapabilities maps a pack or configuration event to the Capability it names —
// on an update both the old and the new one, so a pack moved to another Capability
// leaves the first one's bundle too.
func (r *BundleReconciler) enqueueCapabilities() handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		key := types.NamespacedName{Namespace: o.GetNamespace(), Name: capabilityRef(o)}
		r.changes.changed(key)
		q.Add(reconcile.Request{NamespacedName: key})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.ObjectOld)
			add(q, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
	}
}
