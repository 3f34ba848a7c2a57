package admission

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
)

// neighbours is what the validation of one RulePack knows of the other packs naming the
// same Capability and of the bundle published for it.
type neighbours struct {
	// owner maps every qualified identifier another pack defines, in its current or its
	// published generation, to that pack: published packs first, then by name.
	owner map[string]string
	// published are the other packs' published generations, in bundle order, and
	// publishedOwner maps their identifiers to them.
	published      []publishedPack
	publishedOwner map[string]string
	// own is the pack's own published generation, nil when it has none.
	own *bundle.Pack
	// configs are the published configurations, in the order they apply.
	configs []bundle.Config
}

// publishedPack is a pack's published generation and its rules' qualified identifiers.
type publishedPack struct {
	bundle.Pack
	qids []string
}

// loadNeighbours reads the neighbours of the pack named self bound to capability. A
// pack whose current generation is the published one is read from the bundle, which is
// decoded already.
func loadNeighbours(ctx context.Context, cl Cluster, capability types.NamespacedName, self string) (*neighbours, error) {
	packs, err := cl.RulePacks(ctx, capability)
	if err != nil {
		return nil, err
	}
	b, err := cl.Bundle(ctx, capability)
	if err != nil {
		return nil, err
	}
	// Most identifiers are the published packs': the maps are made with room for them.
	published := 0
	if b != nil {
		for i := range b.Packs {
			published += len(b.Packs[i].Rules)
		}
	}
	n := &neighbours{owner: make(map[string]string, published), publishedOwner: make(map[string]string, published)}
	publishedGeneration := map[string]int64{}
	if b != nil {
		n.configs = b.Configs
		for i := range b.Packs {
			p := &b.Packs[i]
			if p.Name == self {
				n.own = p
				continue
			}
			pp := publishedPack{Pack: *p, qids: qualifiedIDs(p.Rules)}
			n.published = append(n.published, pp)
			publishedGeneration[p.Name] = p.Generation
			for _, q := range pp.qids {
				claim(n.publishedOwner, q, p.Name)
				claim(n.owner, q, p.Name)
			}
		}
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].Name < packs[j].Name })
	for i := range packs {
		p := &packs[i]
		if g, ok := publishedGeneration[p.Name]; p.Name == self || ok && g == p.Generation {
			continue
		}
		_, qids, _, _ := decodeRules(p.Spec.Rules)
		for _, q := range qids {
			claim(n.owner, q, p.Name)
		}
	}
	return n, nil
}

// claim records pack as the owner of qid unless another pack was recorded first.
func claim(owner map[string]string, qid, pack string) {
	if _, taken := owner[qid]; !taken && qid != "" {
		owner[qid] = pack
	}
}

// qualifiedIDs returns each rule document's qualified identifier, "" where the id or
// namespace is malformed.
func qualifiedIDs(rules []any) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i], _ = engine.QualifiedID(r)
	}
	return out
}

// idSet returns the non-empty identifiers of qids as a set.
func idSet(qids []string) map[string]bool {
	s := make(map[string]bool, len(qids))
	for _, q := range qids {
		if q != "" {
			s[q] = true
		}
	}
	return s
}
