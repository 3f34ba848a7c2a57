package admission

import (
	"fmt"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// What a pack that loads on its own may still do to other packs and configurations is
// left to the controller, which decides in status; admission warns about it, naming the
// other resource.

// duplicates warns about a rule another pack defines too ([OAR-DOC-9]).
func (p *packContext) duplicates(w *warnings) {
	for i, q := range p.qids {
		if other, ok := p.n.owner[q]; ok {
			w.add(DuplicateRule, "OAR-DOC-9", rulePath(i, "id"), "rule %s is also defined by RulePack %q; a rule set holds one rule per qualified identifier, so the controller publishes only one of the two packs", q, other)
		}
	}
}

// dependencies warns about a reference to a rule that only a pack not published defines
// ([OAR-EVAL-13], [OAR-OPS-5], [OAR-FIRE-11]): the pack is published only once that one is.
func (p *packContext) dependencies(w *warnings) {
	for i, refs := range p.refs {
		for _, ref := range refs {
			if p.ours[ref.target] {
				continue
			}
			if _, published := p.n.publishedOwner[ref.target]; published {
				continue
			}
			if other, ok := p.n.owner[ref.target]; ok {
				w.add(UnpublishedReference, ref.clause, rulePath(i, ref.field), "rule %s references %s, which only RulePack %q defines, and it is not published; the controller publishes this pack once it is", p.qids[i], ref.target, other)
			}
		}
	}
}

// conflicts loads the pack with the published packs and warns about what the set would
// refuse because of the pack: a suppression cycle across packs ([OAR-EVAL-16]), an
// override of another pack's mandatory rule or of one the pack makes mandatory
// ([OAR-EVAL-17]), a published rule that references a rule the pack no longer has.
//
// The pack's own rules loaded already, so they take part as skeletons, and so do the
// published packs' — only the relational ones, with stubs for what they reference: no
// other rule can be part of a cycle or a suppressed mandatory rule. When the pack drops
// a rule it had published, every rule takes part, the published packs' whole: any of
// their conditions may count that rule's firings. A rule defined twice is the pack's
// (the duplicate is warned about already).
func (p *packContext) conflicts(w *warnings) {
	if len(p.n.published) == 0 || p.anchor == "" {
		return
	}
	whole := len(p.removed) > 0
	var docs []any
	type place struct {
		pack  string
		index int
	}
	var places []place // where each of docs comes from; pack "" for this one
	have, want := map[string]bool{}, map[string]bool{}
	add := func(pack string, index int, qid string, doc, part any) {
		docs, places, have[qid] = append(docs, part), append(places, place{pack, index}), true
		for _, e := range edges(doc) {
			want[e.target] = true
		}
	}
	for i, r := range p.rules {
		if whole || p.relational(i) {
			add("", i, p.qids[i], r, skeleton(r, p.anchor))
		}
	}
	for _, pk := range p.n.published {
		if whole {
			for j, r := range pk.Rules {
				if q := pk.qids[j]; !p.ours[q] {
					add(pk.Name, j, q, r, r)
				}
			}
			continue
		}
		for _, j := range pk.relational {
			if q, r := pk.qids[j], pk.Rules[j]; !p.ours[q] {
				add(pk.Name, j, q, r, skeleton(r, p.anchor))
			}
		}
	}
	for q := range p.removed {
		delete(want, q)
	}
	docs = append(docs, stubs(want, have, p.anchor)...)
	errs := engine.CheckRules(p.cap, docs)
	for _, e := range errs {
		if e.Index < 0 || e.Index >= len(places) {
			continue
		}
		switch at := places[e.Index]; {
		case at.pack == "":
			if other := p.otherPack(e.Related); other != "" {
				w.add(PackConflict, e.Clause, rulePath(at.index, e.Field), "%s (with RulePack %q); the controller does not publish the two packs together", e.Message, other)
			}
		case p.involved(e):
			consequence := "this change would make that published pack stop loading"
			if p.moving != "" {
				consequence = p.moving + ", and the controller leaves that pack out of it"
			}
			w.add(PackConflict, e.Clause, fmt.Sprintf("RulePack %q %s", at.pack, rulePath(at.index, e.Field)),
				"%s (rule %s); %s", e.Message, e.Rule, consequence)
		}
	}
}

// relational reports whether the pack's rule i is relational (relational), from the
// references the load listed.
func (p *packContext) relational(i int) bool {
	for _, ref := range p.refs[i] {
		if ref.field != "when" {
			return true
		}
	}
	obj, _ := p.rules[i].(map[string]any)
	return obj["mandatory"] == true
}

// otherPack names the pack, other than this one, that defines one of the rules qids.
func (p *packContext) otherPack(qids []string) string {
	for _, q := range qids {
		if !p.ours[q] {
			if other, ok := p.n.owner[q]; ok {
				return other
			}
		}
	}
	return ""
}

// involved reports whether a diagnostic about another pack's rule is the pack's doing:
// it names one of the pack's rules, or a reference of that rule no longer resolves because
// the pack dropped its target.
func (p *packContext) involved(e *diag.Error) bool {
	for _, q := range e.Related {
		if p.ours[q] {
			return true
		}
	}
	switch e.Clause {
	case "OAR-EVAL-13", "OAR-OPS-5":
		return p.removed[engine.ResolveRef(e.Value, namespaceOf(e.Rule))]
	case "OAR-FIRE-11":
		return len(p.removed) > 0
	}
	return false
}

// configurations applies the published configurations to the rules the bundle would
// hold with the pack — its rules and the other published packs' — and warns about each
// that would no longer apply because of the pack: it names a rule the pack dropped
// ([OAR-CFG-4]), disables or downgrades a rule the pack makes mandatory ([OAR-CFG-5]),
// or names a bare id the pack makes ambiguous ([OAR-CFG-8]). The controller holds the
// pack back instead, since nothing evicts a published configuration: a published pack's
// update keeps its published generation serving, a pack not published yet is not
// published. Only the rules the
// configurations name take part, as identities: a configuration looks up no other.
func (p *packContext) configurations(w *warnings) {
	if len(p.n.configs) == 0 || p.anchor == "" {
		return
	}
	configs := make([]any, len(p.n.configs))
	for i, cf := range p.n.configs {
		configs[i] = cf.Document
	}
	names := named(configs)
	var docs []any
	for i, r := range p.rules {
		if namedBy(p.qids[i], names) {
			docs = append(docs, identity(r, p.anchor))
		}
	}
	for _, pk := range p.n.published {
		for j, r := range pk.Rules {
			if q := pk.qids[j]; !p.ours[q] && namedBy(q, names) {
				docs = append(docs, identity(r, p.anchor))
			}
		}
	}
	rs, _ := engine.LoadRules(p.cap, docs)
	if rs == nil {
		return
	}
	consequence := "this change would make that published configuration no longer apply, and the controller would hold this update back (Conflict), the published generation serving, until the pack or the configuration changes"
	switch {
	case p.moving != "":
		consequence = p.moving + ", and the controller leaves that published configuration out of it"
	case p.n.own == nil:
		consequence = "this change would make that published configuration no longer apply, and the controller would hold this pack back (Conflict) until the pack or the configuration changes"
	}
	_, errs := engine.Configure(rs, configs)
	for _, e := range errs {
		if e.Index >= 0 && e.Index < len(p.n.configs) && p.concerns(e) {
			w.add(ConfigurationConflict, e.Clause, fmt.Sprintf("OperatorConfig %q %s", p.n.configs[e.Index].Name, diag.JoinPath("spec.config", e.Field)),
				"%s; %s", e.Message, consequence)
		}
	}
}

// concerns reports whether a configuration diagnostic is the pack's doing: it names one of
// the pack's rules (a rule made mandatory, a bare id made ambiguous) or one the pack
// dropped.
func (p *packContext) concerns(e *diag.Error) bool {
	if p.ours[e.Rule] || p.removed[e.Rule] {
		return true
	}
	for _, q := range e.Related {
		if p.ours[q] {
			return true
		}
	}
	return e.Clause == "OAR-CFG-4" && !strings.Contains(e.Rule, "/") && p.removedIDs[e.Rule]
}
