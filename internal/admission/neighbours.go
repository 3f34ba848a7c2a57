package admission

import (
	"context"
	"maps"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
)

// neighbours is what the validation of one RulePack knows of the other packs naming the
// same Capability and of the bundle published for it.
type neighbours struct {
	// owner maps every qualified identifier another pack defines, in its current or its
	// published generation, to that pack: published packs first, then by name. A
	// published generation counts only while it is an incumbent (readIncumbents).
	owner map[string]string
	// published are the other packs' published generations, in bundle order, and
	// publishedOwner maps their identifiers to them.
	published      []publishedPack
	publishedOwner map[string]string
	// own is the pack's own published generation, nil when it has none.
	own *bundle.Pack
	// configs are the published configurations that are incumbents (readIncumbents), in
	// the order they apply; read packsOnly, whatever became of their objects.
	configs []bundle.Config
	// pendingByID maps each bare id to the first rule by identifier, of the packs not
	// published, that has it: made by pending when first asked.
	pendingByID map[string]pendingRule
}

// publishedPack is a pack's published generation, its rules' qualified identifiers,
// and the indices of its relational rules (relational).
type publishedPack struct {
	bundle.Pack
	qids       []string
	relational []int
}

// loadNeighbours reads the neighbours of the pack named self, the object selfUID, bound
// to capability, and the objects of the published configurations unless read is
// packsOnly. A pack whose current generation is the published one is read from the
// bundle, which is decoded already, through views.
func loadNeighbours(ctx context.Context, cl Cluster, capability types.NamespacedName, self string, selfUID types.UID, read scope) (*neighbours, error) {
	packs, err := cl.RulePacks(ctx, capability)
	if err != nil {
		return nil, err
	}
	b, uids, err := cl.Bundle(ctx, capability)
	if err != nil {
		return nil, err
	}
	in, err := readIncumbents(ctx, cl, capability, b, uids, packs, self, selfUID, read)
	if err != nil {
		return nil, err
	}
	v := viewOf(capability, b, self, in.retired)
	n := &neighbours{owner: v.publishedOwner, publishedOwner: v.publishedOwner, published: v.published, own: v.own, configs: in.configs}
	sort.Slice(packs, func(i, j int) bool { return packs[i].Name < packs[j].Name })
	cloned := false
	for i := range packs {
		p := &packs[i]
		if g, ok := v.generation[p.Name]; p.Name == self || ok && g == p.Generation {
			continue
		}
		_, qids, _, _ := decodeRules(p.Spec.Rules)
		for _, q := range qids {
			if _, taken := n.owner[q]; taken || q == "" {
				continue
			}
			if !cloned {
				// owner starts as the view's, which is shared: it is copied once
				// another pack adds to it.
				n.owner, cloned = maps.Clone(n.owner), true
			}
			n.owner[q] = p.Name
		}
	}
	return n, nil
}

// bundleView is what the neighbours of a pack read of a bundle: its other packs'
// published generations and their rules' qualified identifiers, which it decoded
// already. It is shared, and not modified.
type bundleView struct {
	published      []publishedPack
	publishedOwner map[string]string
	// generation is each other pack's published generation.
	generation map[string]int64
	own        *bundle.Pack
}

// bundleViews are the views of one Capability's bundle: its packs, their rules'
// identifiers and relational rules, read once, and the view each pack has.
type bundleViews struct {
	bundle *bundle.Bundle
	packs  []publishedPack
	mu     sync.Mutex
	bySelf map[string]*bundleView
}

const (
	// viewsPerGeneration bounds the Capabilities whose bundle views are kept: at most
	// two generations of this many, each keeping one bundle, the one its Cluster
	// hands out.
	viewsPerGeneration = 32
	// viewsPerBundle bounds the packs' views kept of one bundle; past it, they are
	// forgotten and read anew.
	viewsPerBundle = 8
)

// views keeps each Capability's bundle views, of the bundle last seen: a Cluster hands
// out the same bundle until the controller publishes another (ClientCluster), and a
// bundle is not modified once handed out, so each pack's view of it is read once.
var views = generations[types.NamespacedName, *bundleViews]{size: viewsPerGeneration}

// viewOf returns the view that the pack named self has of b, the bundle of the
// Capability capability, which may be nil, through views; the published packs named in
// retired, incumbents no longer (readIncumbents), are not in it. Such a view depends on
// the live packs as well, and is needed only until the controller publishes again (or
// its hold clears): it is read anew each time, not kept.
func viewOf(capability types.NamespacedName, b *bundle.Bundle, self string, retired map[string]bool) *bundleView {
	bv, ok := views.get(capability)
	if !ok || bv.bundle != b {
		bv = newBundleViews(b)
		views.put(capability, bv)
	}
	if len(retired) > 0 {
		return bv.view(self, retired)
	}
	bv.mu.Lock()
	defer bv.mu.Unlock()
	if v, ok := bv.bySelf[self]; ok {
		return v
	}
	if len(bv.bySelf) >= viewsPerBundle {
		clear(bv.bySelf)
	}
	v := bv.view(self, nil)
	bv.bySelf[self] = v
	return v
}

// newBundleViews reads the packs of b, which may be nil.
func newBundleViews(b *bundle.Bundle) *bundleViews {
	bv := &bundleViews{bundle: b, bySelf: map[string]*bundleView{}}
	if b == nil {
		return bv
	}
	for i := range b.Packs {
		p := &b.Packs[i]
		pp := publishedPack{Pack: *p, qids: qualifiedIDs(p.Rules)}
		for j, r := range p.Rules {
			if relational(r) {
				pp.relational = append(pp.relational, j)
			}
		}
		bv.packs = append(bv.packs, pp)
	}
	return bv
}

// view is the view of the bundle that the pack named self has, without the published
// packs named in retired: self has no published generation when it is one of them.
func (bv *bundleViews) view(self string, retired map[string]bool) *bundleView {
	// Most identifiers are the published packs': the map is made with room for them.
	published := 0
	for i := range bv.packs {
		published += len(bv.packs[i].qids)
	}
	v := &bundleView{publishedOwner: make(map[string]string, published), generation: map[string]int64{}}
	if bv.bundle == nil {
		return v
	}
	for i := range bv.packs {
		pp := bv.packs[i]
		if pp.Name == self && !retired[self] {
			v.own = &bv.bundle.Packs[i]
		}
		if pp.Name == self || retired[pp.Name] {
			continue
		}
		v.published = append(v.published, pp)
		v.generation[pp.Name] = pp.Generation
		for _, q := range pp.qids {
			claim(v.publishedOwner, q, pp.Name)
		}
	}
	return v
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
