package sidecar

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

// DefaultSessionRetries is how many times an occurrence is evaluated again when another
// replica changed its session between the read and the commit.
const DefaultSessionRetries = 8

// ErrContention names, in an answer's failures, a session that stayed contended past
// the retry bound.
var ErrContention = errors.New("session store contention")

// evaluateShared evaluates occ into buf against its session as the shared store holds
// it (read by one round trip, or from the store's cache of sessions), and commits the
// changes only if no other replica changed the session meanwhile; on a conflict it
// re-evaluates against the session as the refusal found it, at most SessionRetries more
// times. The evaluation's events are published only once its changes are committed, so a
// re-evaluated occurrence never publishes twice. When the store cannot be read or
// written, or the session stays contended, the occurrence is evaluated once more without
// session state, so each rule needing it is handled by its own on_error and the decision
// claims nothing that was not applied ([OAR-FIRE-9], [OAR-OPS-3]); when the store may
// have applied a commit whose answer was lost (redisstore.ErrOutcomeUnknown), the
// failures say that it may have. committed reports
// whether the decision is one whose changes were committed; state then holds the
// session's versions it read and left, for the decision log.
func (s *Sidecar) evaluateShared(sv *reload.Served, occ *engine.Occurrence, buf *engine.DecisionBuffer) (d *engine.Decision, state decisionlog.SessionState, committed bool) {
	ctx := context.Background()
	prog := sv.Loaded.Program
	store := s.opt.SharedSessions
	for attempt := 0; attempt <= s.opt.SessionRetries; attempt++ {
		if attempt > 0 {
			s.metrics.SessionRetried()
		}
		snap, err := store.Load(ctx, occ.SessionID)
		if err != nil {
			return s.evaluateWithoutSession(sv, occ, buf, fmt.Errorf("the session store is unreachable: %w", err)), state, false
		}
		events := &eventBuffer{}
		rt := &engine.Runtime{Counters: snap, Activity: snap, Events: events, Detectors: sv.Runtime.Detectors}
		d = prog.EvaluateInto(rt, occ, buf)
		ok, err := store.Commit(ctx, snap)
		if errors.Is(err, redisstore.ErrOutcomeUnknown) {
			return s.evaluateWithoutSession(sv, occ, buf, fmt.Errorf("the session store is unreachable, and this occurrence's changes to the session may or may not have been applied: %w", err)), state, false
		}
		if err != nil {
			return s.evaluateWithoutSession(sv, occ, buf, fmt.Errorf("the session store is unreachable: %w", err)), state, false
		}
		if ok {
			s.publish(sv, d, events.events)
			state.Read, state.Written, _ = snap.Versions()
			return d, state, true
		}
	}
	s.metrics.SessionContended()
	return s.evaluateWithoutSession(sv, occ, buf, fmt.Errorf("%w: session %q was changed by another replica at each of %d attempts", ErrContention, occ.SessionID, s.opt.SessionRetries+1)), state, false
}

func (s *Sidecar) evaluateWithoutSession(sv *reload.Served, occ *engine.Occurrence, buf *engine.DecisionBuffer, cause error) *engine.Decision {
	snap := redisstore.Unavailable(occ.SessionID, cause)
	rt := &engine.Runtime{Counters: snap, Activity: snap, Events: sv.Runtime.Events, Detectors: sv.Runtime.Detectors}
	return sv.Loaded.Program.EvaluateInto(rt, occ, buf)
}

// publish writes the events of a committed evaluation. One the stream refuses cannot
// go to its rule's on_error any more (the counters are committed); the decision then
// drops it from events and on_fire and reports the failure ([OAR-FIRE-9]). The engine
// appends an event and its publish_event entry of on_fire together, so the n-th event
// is the n-th publish_event there.
func (s *Sidecar) publish(sv *reload.Served, d *engine.Decision, events []engine.Event) {
	kept := d.Events[:0]
	for _, e := range events {
		err := sv.Runtime.Events.Publish(e)
		if err == nil {
			kept = append(kept, e)
			continue
		}
		d.Failures = append(d.Failures, engine.Failure{Rule: e.Rule, Clause: "OAR-FIRE-9",
			Error: "publish_event: " + err.Error() + " (after the session's changes were committed)"})
		d.OnFire = deleteNth(d.OnFire, engine.ActionPublishEvent.String(), len(kept))
	}
	d.Events = kept
}

// deleteNth removes the n-th (from 0) entry of list equal to v, if there is one.
func deleteNth(list []string, v string, n int) []string {
	for i, x := range list {
		if x != v {
			continue
		}
		if n == 0 {
			return slices.Delete(list, i, i+1)
		}
		n--
	}
	return list
}

// eventBuffer holds an evaluation's events until its changes are committed.
type eventBuffer struct{ events []engine.Event }

func (b *eventBuffer) Publish(e engine.Event) error {
	b.events = append(b.events, e)
	return nil
}
