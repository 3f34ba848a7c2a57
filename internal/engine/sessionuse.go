package engine

// sessionAnchors lists the local anchors whose occurrences may read or write session
// state (counters, [OAR-FIRE-3], or the activity window, [OAR-PROF-9]).
func sessionAnchors(p *Program) map[string]bool {
	out := map[string]bool{}
	for _, r := range p.rs.Rules {
		if p.enforcement[r.Index] == EnforceOff {
			continue
		}
		if p.usesSession(r) {
			out[r.Local] = true
		}
	}
	// An admitted tool call appends a step to the window whenever the host advertises
	// one ([OAR-PROF-9]), whether or not this program's rules read it: a session keeps
	// its window across reloads, and the next bundle's flow rules read the steps taken
	// under this one. A program checked without a capability (oarctl validating a set
	// on its own) has no anchors to map.
	if p.cap == nil || p.cap.ActivityWindow == 0 {
		return out
	}
	if local, ok := p.cap.LocalAnchor(AnchorToolPreInvoke); ok {
		out[local] = true
	}
	return out
}

// usesSession reports whether evaluating r may touch session state: its flow, a
// counter action in on_fire, a counter read anywhere in it, or a counter read in the
// copy of the rule its on_error substitutes ([OAR-OPS-5]).
func (p *Program) usesSession(r *Rule) bool {
	if len(r.Flow) > 0 || p.readsCounters(r) {
		return true
	}
	for _, a := range r.OnFire {
		if a != ActionPublishEvent {
			return true
		}
	}
	return r.OnError == Substitute && p.readsCounters(p.rs.Rules[r.OnErrorRule])
}

func (p *Program) readsCounters(r *Rule) bool {
	for _, sym := range r.refs {
		if info := p.cap.symbol(sym.ID); info.Tier == TierCore {
			switch info.Name {
			case factFireCount, factBreakerCount, funcFireCountOf, funcBreakerCountOf:
				return true
			}
		}
	}
	return false
}

// UsesSession reports whether an occurrence at the host-local anchor may read or write
// session state. When it does not, the Runtime's CounterStore and ActivityStore are
// never called for it (an engine sharing sessions through a remote store can then skip
// the round trip); the answer is fixed when the program is configured.
func (p *Program) UsesSession(anchor string) bool { return p.session[anchor] }
