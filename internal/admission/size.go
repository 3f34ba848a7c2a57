package admission

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// bundleFraming bounds the JSON a bundle adds around its capability document and its
// packs' rules: the members' names, the packs' names and generations, the digest.
const bundleFraming = 4 << 10

// mayNotFit reports whether a bundle holding rules of raw bytes of JSON and the
// capability document could be over the ConfigMap limit once encoded: whether its JSON,
// at most raw bytes of rules (the canonical JSON is never longer than the API server's)
// with the document and the framing, is over the limit less gzip's worst-case growth.
// Only then is the bundle encoded to know (at best compression, too slow for every pack).
func mayNotFit(raw int, capability map[string]any) bool {
	if raw < bundle.ConfigMapLimit/2 {
		return false
	}
	doc, err := json.Marshal(capability)
	if err != nil {
		return true
	}
	n := raw + len(doc) + bundleFraming
	return n+n/1000+64 > bundle.ConfigMapLimit
}

// size refuses the pack named name, at generation, when the bundle of its Capability
// (capability, the document) with this pack alone does not fit in a ConfigMap: the
// controller could never publish it, whatever else is published (BundleTooLarge). It
// warns when the pack fits alone but not with the published packs and configurations.
// A pack is measured only when its rules' JSON, raw bytes, is near the limit
// (mayNotFit): a smaller one that overflows only with the published packs is left to
// the controller, which says BundleTooLarge in its status.
func (p *packContext) size(name string, generation int64, raw int, capability map[string]any, w *warnings) diag.List {
	if !mayNotFit(raw, capability) {
		return nil
	}
	self := bundle.Pack{Name: name, Generation: generation, Rules: p.rules}
	var tle *bundle.TooLargeError
	if _, err := bundle.Encode(&bundle.Bundle{Capability: capability, Packs: []bundle.Pack{self}}); errors.As(err, &tle) {
		return diag.List{diag.New("", "", "the pack is too large to publish even alone: the bundle holding only this pack and its Capability document would be %s; the controller leaves it out (BundleTooLarge) whatever else is published: split it into smaller packs", sizes(tle))}
	}
	if len(p.n.published) == 0 {
		return nil
	}
	together := &bundle.Bundle{Capability: capability, Configs: p.n.configs}
	for _, pk := range p.n.published {
		together.Packs = append(together.Packs, pk.Pack)
	}
	together.Packs = append(together.Packs, self)
	if _, err := bundle.Encode(together); errors.As(err, &tle) {
		consequence := "the controller holds this pack back (BundleTooLarge) until there is room"
		if p.n.own != nil {
			consequence = "the controller keeps the published generation serving (BundleTooLarge) until there is room"
		}
		w.add(BundleTooLarge, "", "spec.rules", "with the %s and %s published for its Capability, the bundle would be %s; %s", count(len(p.n.published), "pack"), count(len(p.n.configs), "configuration"), sizes(tle), consequence)
	}
	return nil
}

// sizes says how large a bundle too large is, and over which limit.
func sizes(e *bundle.TooLargeError) string {
	if e.Encoded == 0 {
		return fmt.Sprintf("%d bytes of JSON, over the %d bytes a bundle may decompress to", e.Plain, e.Limit)
	}
	return fmt.Sprintf("%d bytes of JSON compressing to %d bytes, over the ConfigMap limit of %d", e.Plain, e.Encoded, e.Limit)
}
