package engine

import "fmt"

// Portability is the report of [OAR-PROF-8] for one rule: whether it is portable under
// [OAR-PROF-6] and, when it is not, what makes it so. It never refuses a rule.
type Portability struct {
	Rule     string   `json:"rule"`
	Portable bool     `json:"portable"`
	Reasons  []string `json:"reasons,omitempty"`
	// FlowSteps is the length of the rule's flow: such a rule travels only to engines
	// whose activity window accommodates it ([OAR-FACT-13]).
	FlowSteps int `json:"flowSteps,omitempty"`
}

// Portability reports on r against the capability it was loaded with.
func (rs *RuleSet) Portability(r *Rule) Portability {
	p := Portability{Rule: r.QID, FlowSteps: len(r.Flow)}
	if !r.Core {
		p.Reasons = append(p.Reasons, fmt.Sprintf("anchor %q is host-native", r.Anchor))
	}
	required := map[string]bool{}
	if req, ok := r.doc["requires"].(map[string]any); ok {
		if list, ok := req["profiles"].([]any); ok {
			for _, v := range list {
				if s, ok := v.(string); ok {
					required[s] = true
				}
			}
		}
	}
	for _, sym := range r.refs {
		info := rs.Capability.symbol(sym.ID)
		switch {
		case info.Tier == TierHost:
			p.Reasons = append(p.Reasons, fmt.Sprintf("references host-tier %q", sym.Name))
		case info.Tier == TierProfile && !required[info.Profile]:
			p.Reasons = append(p.Reasons, fmt.Sprintf("references %q of profile %s, which requires.profiles does not name", sym.Name, info.Profile))
		}
	}
	p.Portable = len(p.Reasons) == 0
	return p
}
