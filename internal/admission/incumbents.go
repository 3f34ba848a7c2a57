package admission

import (
	"context"
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// What of a published bundle the controller's next bundle can still hold, whatever
// else changes: the packs and configurations whose objects are there, bound to the
// Capability and not being deleted, the same objects they were published for, and of
// those what still loads together. The controller assembles from the same objects
// (BundleReconciler.input, bundle.Input.incumbents) and leaves the rest out of the next
// bundle: a published pack deleted, being deleted, bound elsewhere or created again, a
// published pack whose reference names a rule only such a pack defines, and a
// configuration naming such a rule ([OAR-CFG-4]). They hold nothing back and define
// nothing for others. A bundle held back (a narrowed or invalid Capability) still serves
// them until the hold clears, but what is under validation is published only after it
// clears: it is judged against the bundle that follows.

// incumbents is what of a published bundle is still an incumbent.
type incumbents struct {
	// retired names the published packs that are incumbents no longer, nil when none is.
	retired map[string]bool
	// configs are the published configurations that still are, in the order they apply.
	configs []bundle.Config
}

// scope says whether readIncumbents reads the objects of the published configurations.
type scope bool

const (
	withConfigurations scope = true
	// packsOnly takes the published configurations as they are, whatever became of their
	// objects, for a caller that judges against the packs alone: a configuration under
	// validation, or a capability document, which the configurations apply under as they
	// did once the packs load.
	packsOnly scope = false
)

// readIncumbents returns what of b, the bundle published for the Capability capability,
// uids recording whose its packs and configurations are, is still an incumbent: packs are
// the packs bound to the Capability and not being deleted, and the pack named self is the
// object selfUID ("" when no pack is under validation).
func readIncumbents(ctx context.Context, cl Cluster, capability types.NamespacedName, b *bundle.Bundle, uids *resource.PublishedUIDs, packs []rulesv1alpha1.RulePack, self string, selfUID types.UID, read scope) (incumbents, error) {
	var in incumbents
	if b == nil {
		return in, nil
	}
	var err error
	if in.retired, err = retiredPacks(ctx, cl, capability, b, uids, packs, self, selfUID); err != nil {
		return in, err
	}
	in.configs = b.Configs
	if read == withConfigurations {
		if in.configs, err = publishedConfigs(ctx, cl, capability, b.Configs, uids); err != nil {
			return in, err
		}
	}
	if len(in.retired) == 0 {
		return in, nil
	}
	kept := stillLoading(&bundle.Bundle{Capability: b.Capability, Packs: in.packs(b), Configs: in.configs})
	for _, p := range b.Packs {
		if !slices.ContainsFunc(kept.Packs, func(k bundle.Pack) bool { return k.Name == p.Name }) {
			in.retired[p.Name] = true
		}
	}
	in.configs = kept.Configs
	return in, nil
}

// packs returns the packs of b that are still incumbents.
func (in incumbents) packs(b *bundle.Bundle) []bundle.Pack {
	if len(in.retired) == 0 {
		return b.Packs
	}
	return slices.DeleteFunc(slices.Clone(b.Packs), func(p bundle.Pack) bool { return in.retired[p.Name] })
}

// retiredPacks returns the names of the packs b publishes that no object of packs, nor
// the pack named self, the object selfUID, holds, or that another object holds than the
// one they were published for, per uids (a newcomer, whose generation, 1 again once
// created anew, says nothing of the published one); nil when there is none (retirees).
func retiredPacks(ctx context.Context, cl Cluster, capability types.NamespacedName, b *bundle.Bundle, uids *resource.PublishedUIDs, packs []rulesv1alpha1.RulePack, self string, selfUID types.UID) (map[string]bool, error) {
	holders := make(map[string]types.UID, len(packs)+1)
	for i := range packs {
		holders[packs[i].Name] = packs[i].UID
	}
	if self != "" {
		holders[self] = selfUID
	}
	names := make([]string, len(b.Packs))
	for i := range b.Packs {
		names[i] = b.Packs[i].Name
	}
	return retirees(ctx, names, holders, uids.NewPack, func(ctx context.Context, name string) (types.UID, bool, error) {
		if name == self {
			return selfUID, true, nil
		}
		p, err := cl.RulePack(ctx, capability, name)
		if err != nil || p == nil {
			return "", false, err
		}
		return p.UID, true, nil
	})
}

// publishedConfigs returns the configurations of published, the bundle's, that an
// OperatorConfig bound to the Capability and not being deleted holds, the object each
// was published for, per uids (retirees); published as is when all are.
func publishedConfigs(ctx context.Context, cl Cluster, capability types.NamespacedName, published []bundle.Config, uids *resource.PublishedUIDs) ([]bundle.Config, error) {
	if len(published) == 0 {
		return published, nil
	}
	live, err := cl.OperatorConfigs(ctx, capability)
	if err != nil {
		return nil, err
	}
	holders := make(map[string]types.UID, len(live))
	for i := range live {
		holders[live[i].Name] = live[i].UID
	}
	names := make([]string, len(published))
	for i := range published {
		names[i] = published[i].Name
	}
	retired, err := retirees(ctx, names, holders, uids.NewConfig, func(ctx context.Context, name string) (types.UID, bool, error) {
		oc, err := cl.OperatorConfig(ctx, capability, name)
		if err != nil || oc == nil {
			return "", false, err
		}
		return oc.UID, true, nil
	})
	if err != nil || len(retired) == 0 {
		return published, err
	}
	return slices.DeleteFunc(slices.Clone(published), func(c bundle.Config) bool { return retired[c.Name] }), nil
}

// retirees returns those of names, published, that are incumbents no longer, nil when
// none is: the names no object holds (holders maps each name to the object bound to
// the Capability and not being deleted that holds it), and those another object holds
// than the one the name was published for (newIdentity). holders may come from a cache
// a moment behind the bundle, which may have been read past it (ClientCluster): what
// holders says of a name is confirmed with holder, which reads past the cache, before
// the name is retired.
func retirees(ctx context.Context, names []string, holders map[string]types.UID, newIdentity func(name string, uid types.UID) bool, holder func(ctx context.Context, name string) (types.UID, bool, error)) (map[string]bool, error) {
	var retired map[string]bool
	for _, name := range names {
		if uid, held := holders[name]; held && !newIdentity(name, uid) {
			continue
		}
		uid, held, err := holder(ctx, name)
		if err != nil {
			return nil, err
		}
		if held && !newIdentity(name, uid) {
			continue
		}
		if retired == nil {
			retired = map[string]bool{}
		}
		retired[name] = true
	}
	return retired, nil
}

// stillLoading returns what of b loads: without what does not under b's capability
// document, one round of owners at a time, until the rest loads. It is how the
// controller, taking what it published, leaves out a pack whose reference names a rule
// no pack it takes defines, and a configuration naming such a rule.
func stillLoading(b *bundle.Bundle) *bundle.Bundle {
	kept := &bundle.Bundle{Capability: b.Capability, Packs: b.Packs, Configs: b.Configs}
	for range len(b.Packs) + len(b.Configs) {
		var le *bundle.LoadError
		if _, err := bundle.Load(kept); !errors.As(err, &le) || le.Stage == bundle.StageCapability {
			break // a document that does not load leaves nothing out in particular
		}
		failing := map[string]bool{}
		for _, o := range le.Owners {
			failing[o] = true
		}
		if le.Stage == bundle.StageConfigs {
			kept.Configs = slices.DeleteFunc(slices.Clone(kept.Configs), func(c bundle.Config) bool { return failing[c.Name] })
		} else {
			kept.Packs = slices.DeleteFunc(slices.Clone(kept.Packs), func(p bundle.Pack) bool { return failing[p.Name] })
		}
	}
	return kept
}
