package admission

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// A set of manifests, as a Git repository keeps them, is the intended state of a
// cluster. Offline there is no status and no bundle ConfigMap, so the published state the
// webhook consults is the one the controller would reach on that state: for each
// Capability, bundle.Assemble over the set's packs and configurations naming it, with no
// bundle published before — every object created at once by one sync, so at one
// creationTimestamp and generation 1, and packs and configurations taken in the
// controller's order, which is then by name (configurations by order, then name). A
// missing or invalid Capability has no bundle, as in the cluster. An object the webhook
// refuses stays in the set for the others, as a cluster may hold one (created while the
// webhook was down, or before its Capability changed); the controller leaves it out.

// setCluster is a Cluster over a set of objects without one of them, absent: what the
// webhook reads when absent is created into a cluster holding the others. The views of
// one set share its objects and the assembly inputs made of them, which they only read:
// views may be read at once, each by one goroutine.
type setCluster struct {
	*objectSet
	absent client.Object
	// bundles holds each Capability's bundle once assembled, nil when it has none.
	bundles map[types.NamespacedName]*bundle.Bundle
}

// objectSet is what the views of one set share.
type objectSet struct {
	capabilities []*rulesv1alpha1.Capability
	packs        []*rulesv1alpha1.RulePack
	configs      []*rulesv1alpha1.OperatorConfig
	// packInputs and configInputs are each object as assembly sees it, made once: the
	// input a view assembles is made of the others', and assembly only reads them.
	packInputs   map[*rulesv1alpha1.RulePack]bundle.PackInput
	configInputs map[*rulesv1alpha1.OperatorConfig]bundle.ConfigInput
}

var _ Cluster = &setCluster{}

// newSetCluster returns the view of a set of objects in which every one exists. The
// objects must not change after.
func newSetCluster(capabilities []*rulesv1alpha1.Capability, packs []*rulesv1alpha1.RulePack, configs []*rulesv1alpha1.OperatorConfig) *setCluster {
	set := &objectSet{capabilities: capabilities, packs: packs, configs: configs,
		packInputs:   make(map[*rulesv1alpha1.RulePack]bundle.PackInput, len(packs)),
		configInputs: make(map[*rulesv1alpha1.OperatorConfig]bundle.ConfigInput, len(configs))}
	for _, p := range packs {
		set.packInputs[p] = resource.AssemblyPack(p)
	}
	for _, c := range configs {
		set.configInputs[c] = resource.AssemblyConfig(c)
	}
	return &setCluster{objectSet: set, bundles: map[types.NamespacedName]*bundle.Bundle{}}
}

// without returns the view of the set in which obj does not exist.
func (s *setCluster) without(obj client.Object) *setCluster {
	return &setCluster{objectSet: s.objectSet, absent: obj, bundles: map[types.NamespacedName]*bundle.Bundle{}}
}

// Capability implements Cluster.
func (s *setCluster) Capability(_ context.Context, key types.NamespacedName) (*rulesv1alpha1.Capability, error) {
	for _, c := range s.capabilities {
		if c.Namespace == key.Namespace && c.Name == key.Name && client.Object(c) != s.absent {
			return c, nil
		}
	}
	return nil, nil
}

// RulePacks implements Cluster.
func (s *setCluster) RulePacks(_ context.Context, capability types.NamespacedName) ([]rulesv1alpha1.RulePack, error) {
	var out []rulesv1alpha1.RulePack
	for _, p := range s.boundPacks(capability) {
		out = append(out, *p)
	}
	return out, nil
}

// OperatorConfigs implements Cluster.
func (s *setCluster) OperatorConfigs(_ context.Context, capability types.NamespacedName) ([]rulesv1alpha1.OperatorConfig, error) {
	var out []rulesv1alpha1.OperatorConfig
	for _, c := range s.boundConfigs(capability) {
		out = append(out, *c)
	}
	return out, nil
}

// RulePack implements Cluster.
func (s *setCluster) RulePack(_ context.Context, capability types.NamespacedName, name string) (*rulesv1alpha1.RulePack, error) {
	for _, p := range s.boundPacks(capability) {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, nil
}

// OperatorConfig implements Cluster.
func (s *setCluster) OperatorConfig(_ context.Context, capability types.NamespacedName, name string) (*rulesv1alpha1.OperatorConfig, error) {
	for _, c := range s.boundConfigs(capability) {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, nil
}

// Bundle implements Cluster: the bundle the controller would publish for the
// Capability, assembled on first use. No identities are recorded: the bundle is assembled from the set's own objects, so each
// of its packs is the set's pack of that name.
func (s *setCluster) Bundle(ctx context.Context, capability types.NamespacedName) (*bundle.Bundle, *resource.PublishedUIDs, error) {
	if b, ok := s.bundles[capability]; ok {
		return b, nil, nil
	}
	b, err := s.assemble(ctx, capability)
	if err != nil {
		return nil, nil, err
	}
	s.bundles[capability] = b
	return b, nil, nil
}

// assemble runs the controller's assembly for the Capability, with the inputs the
// controller makes of its objects (internal/resource).
func (s *setCluster) assemble(ctx context.Context, key types.NamespacedName) (*bundle.Bundle, error) {
	capability, _ := s.Capability(ctx, key)
	if capability == nil {
		return nil, nil
	}
	doc, err := resource.CapabilityDocument(capability)
	if err != nil {
		return nil, fmt.Errorf("assemble the bundle of %s: %w", key, err)
	}
	in := bundle.Input{Capability: doc}
	for _, p := range s.boundPacks(key) {
		in.Packs = append(in.Packs, s.packInputs[p])
	}
	for _, c := range s.boundConfigs(key) {
		in.Configs = append(in.Configs, s.configInputs[c])
	}
	res, err := bundle.Assemble(in)
	if err != nil {
		return nil, fmt.Errorf("assemble the bundle of %s: %w", key, err)
	}
	return res.Bundle, nil
}

// boundPacks returns the packs of the set naming the Capability, other than absent.
func (s *setCluster) boundPacks(capability types.NamespacedName) []*rulesv1alpha1.RulePack {
	var out []*rulesv1alpha1.RulePack
	for _, p := range s.packs {
		if p.Namespace == capability.Namespace && p.Spec.CapabilityRef.Name == capability.Name && client.Object(p) != s.absent {
			out = append(out, p)
		}
	}
	return out
}

// boundConfigs returns the configurations of the set naming the Capability, other than
// absent.
func (s *setCluster) boundConfigs(capability types.NamespacedName) []*rulesv1alpha1.OperatorConfig {
	var out []*rulesv1alpha1.OperatorConfig
	for _, c := range s.configs {
		if c.Namespace == capability.Namespace && c.Spec.CapabilityRef.Name == capability.Name && client.Object(c) != s.absent {
			out = append(out, c)
		}
	}
	return out
}
