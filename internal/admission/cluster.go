package admission

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// Cluster is what validation reads of the cluster: the Capability a document names, the
// packs bound to it and the bundle published for it, with whose each of the bundle's
// packs and configurations is. Absent objects are nil, not errors.
// What it returns may be shared with a cache: validation never modifies it.
type Cluster interface {
	// Capability returns the named Capability, or nil when it does not exist or is being
	// deleted.
	Capability(ctx context.Context, key types.NamespacedName) (*rulesv1alpha1.Capability, error)
	// RulePacks returns the RulePacks naming the Capability key, except those being deleted.
	RulePacks(ctx context.Context, capability types.NamespacedName) ([]rulesv1alpha1.RulePack, error)
	// OperatorConfigs returns the OperatorConfigs naming the Capability key, except those
	// being deleted.
	OperatorConfigs(ctx context.Context, capability types.NamespacedName) ([]rulesv1alpha1.OperatorConfig, error)
	// RulePack returns the RulePack name of the Capability's namespace when it names the
	// Capability and is not being deleted, else nil, read past any cache: it confirms
	// that a pack RulePacks does not list, which may be a moment behind, is not there.
	RulePack(ctx context.Context, capability types.NamespacedName, name string) (*rulesv1alpha1.RulePack, error)
	// OperatorConfig is RulePack for an OperatorConfig.
	OperatorConfig(ctx context.Context, capability types.NamespacedName, name string) (*rulesv1alpha1.OperatorConfig, error)
	// Bundle returns the bundle published for the Capability key, or nil when there is none
	// (or the ConfigMap does not hold one the controller wrote), and the objects its packs
	// and configurations belong to (resource.PublishedUIDs), nil when not recorded.
	Bundle(ctx context.Context, capability types.NamespacedName) (*bundle.Bundle, *resource.PublishedUIDs, error)
}

// ClientCluster reads the cluster through a client.Reader, normally the manager's cached
// client, without copying what the cache holds. It keeps the last decoded bundle of each
// Capability until its ConfigMap changes.
type ClientCluster struct {
	Reader client.Reader
	// APIReader, when set, is asked for a Capability Reader does not hold: it may have
	// been created a moment ago, in the same GitOps sync as the pack naming it, and its
	// absence would leave the pack with the checks that need no capability. It is asked
	// for a bundle ConfigMap Reader does not hold too: the manager's cache holds only
	// ConfigMaps with the bundle labels, and a bundle whose labels were removed is still
	// the one the controller serves (resource.OperatorBundle) until it restores them.
	APIReader client.Reader

	mu      sync.Mutex
	bundles map[types.NamespacedName]decodedBundle
}

type decodedBundle struct {
	uid             types.UID
	resourceVersion string
	publication
}

// publication is a bundle and whose its packs and configurations are.
type publication struct {
	bundle *bundle.Bundle
	uids   *resource.PublishedUIDs
}

// snapshot reads each Capability's bundle once, so that one check sees one state of it.
// The controller may publish between two reads: a configuration judged against the
// rule set of the bundle before a pack was published, and against neighbours read from
// the bundle after, would find that pack's rules neither published nor pending.
type snapshot struct {
	Cluster
	bundles map[types.NamespacedName]publication
}

func snapshotOf(cl Cluster) *snapshot {
	return &snapshot{Cluster: cl, bundles: map[types.NamespacedName]publication{}}
}

// Bundle implements Cluster: the first answer for the Capability, every time.
func (s *snapshot) Bundle(ctx context.Context, capability types.NamespacedName) (*bundle.Bundle, *resource.PublishedUIDs, error) {
	if p, ok := s.bundles[capability]; ok {
		return p.bundle, p.uids, nil
	}
	b, uids, err := s.Cluster.Bundle(ctx, capability)
	if err == nil {
		s.bundles[capability] = publication{b, uids}
	}
	return b, uids, err
}

// refresher is a Cluster that can also be read past its cache.
type refresher interface {
	// Fresh returns the same cluster read from the API server.
	Fresh() Cluster
}

// Fresh implements refresher: a ClientCluster reading through APIReader, or c itself
// when there is none.
func (c *ClientCluster) Fresh() Cluster {
	if c.APIReader == nil {
		return c
	}
	return &ClientCluster{Reader: c.APIReader}
}

// Capability implements Cluster.
func (c *ClientCluster) Capability(ctx context.Context, key types.NamespacedName) (*rulesv1alpha1.Capability, error) {
	capability := &rulesv1alpha1.Capability{}
	err := c.Reader.Get(ctx, key, capability, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) && c.APIReader != nil {
		err = c.APIReader.Get(ctx, key, capability)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get capability %s: %w", key, err)
	case !capability.DeletionTimestamp.IsZero():
		return nil, nil
	}
	return capability, nil
}

// RulePacks implements Cluster.
func (c *ClientCluster) RulePacks(ctx context.Context, capability types.NamespacedName) ([]rulesv1alpha1.RulePack, error) {
	var list rulesv1alpha1.RulePackList
	if err := c.Reader.List(ctx, &list, client.InNamespace(capability.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list rule packs in %s: %w", capability.Namespace, err)
	}
	packs := list.Items[:0]
	for _, p := range list.Items {
		if p.Spec.CapabilityRef.Name == capability.Name && p.DeletionTimestamp.IsZero() {
			packs = append(packs, p)
		}
	}
	return packs, nil
}

// OperatorConfigs implements Cluster.
func (c *ClientCluster) OperatorConfigs(ctx context.Context, capability types.NamespacedName) ([]rulesv1alpha1.OperatorConfig, error) {
	var list rulesv1alpha1.OperatorConfigList
	if err := c.Reader.List(ctx, &list, client.InNamespace(capability.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list operator configs in %s: %w", capability.Namespace, err)
	}
	configs := list.Items[:0]
	for _, oc := range list.Items {
		if oc.Spec.CapabilityRef.Name == capability.Name && oc.DeletionTimestamp.IsZero() {
			configs = append(configs, oc)
		}
	}
	return configs, nil
}

// RulePack implements Cluster, reading through APIReader when there is one.
func (c *ClientCluster) RulePack(ctx context.Context, capability types.NamespacedName, name string) (*rulesv1alpha1.RulePack, error) {
	p := &rulesv1alpha1.RulePack{}
	if found, err := c.getPastCache(ctx, types.NamespacedName{Namespace: capability.Namespace, Name: name}, p); err != nil || !found || p.Spec.CapabilityRef.Name != capability.Name {
		return nil, err
	}
	return p, nil
}

// OperatorConfig implements Cluster, reading through APIReader when there is one.
func (c *ClientCluster) OperatorConfig(ctx context.Context, capability types.NamespacedName, name string) (*rulesv1alpha1.OperatorConfig, error) {
	oc := &rulesv1alpha1.OperatorConfig{}
	if found, err := c.getPastCache(ctx, types.NamespacedName{Namespace: capability.Namespace, Name: name}, oc); err != nil || !found || oc.Spec.CapabilityRef.Name != capability.Name {
		return nil, err
	}
	return oc, nil
}

// getPastCache reads obj through APIReader, or Reader when there is none, and reports
// whether it exists and is not being deleted.
func (c *ClientCluster) getPastCache(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	r := c.APIReader
	if r == nil {
		r = c.Reader
	}
	err := r.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get %T %s: %w", obj, key, err)
	}
	return obj.GetDeletionTimestamp().IsZero(), nil
}

// Bundle implements Cluster. A ConfigMap the controller treats as foreign
// (resource.OperatorBundle), or one that does not decode, holds no bundle: the
// controller publishes nothing over a foreign ConfigMap and replaces an unreadable one.
// The identities are its resource.PublishedUIDsAnnotation, read as the controller does.
func (c *ClientCluster) Bundle(ctx context.Context, capability types.NamespacedName) (*bundle.Bundle, *resource.PublishedUIDs, error) {
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: capability.Namespace, Name: resource.BundleName(capability.Name)}
	err := c.Reader.Get(ctx, key, cm, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) && c.APIReader != nil {
		err = c.APIReader.Get(ctx, key, cm)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("get bundle configmap %s: %w", key, err)
	}
	owned := false
	if err == nil {
		owned = resource.LabelledBundle(cm, capability.Name)
		if !owned {
			// Only a ConfigMap without the operator's labels needs the Capability.
			capabilityObj, err := c.Capability(ctx, capability)
			if err != nil {
				return nil, nil, err
			}
			owned = resource.OperatorBundle(cm, capability.Name, capabilityObj)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !owned {
		delete(c.bundles, capability)
		return nil, nil, nil
	}
	if d, ok := c.bundles[capability]; ok && d.uid == cm.UID && d.resourceVersion == cm.ResourceVersion {
		return d.bundle, d.uids, nil
	}
	b, _ := bundle.Decode(cm.Data, cm.BinaryData) // nil when unreadable
	var uids *resource.PublishedUIDs
	if b != nil {
		uids = resource.PublishedUIDsOf(cm.Annotations)
	}
	if c.bundles == nil {
		c.bundles = map[types.NamespacedName]decodedBundle{}
	}
	c.bundles[capability] = decodedBundle{uid: cm.UID, resourceVersion: cm.ResourceVersion, publication: publication{b, uids}}
	return b, uids, nil
}
