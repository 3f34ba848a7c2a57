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
// re-evaluated occurrence never publishes twice; one the stream refuses then decides as
// it does in one engine (publishCommitted). Until then, the commit of an evaluation with
// events holds the session pending for a few milliseconds
// (redisstore.Snapshot.MayNeedCorrection), so another replica never decides on changes
// that are then taken back: its load waits, and one that waits past the store's timeout
// is contention. When the store cannot be read or written, or the session stays
// contended, the occurrence is evaluated once more without session
// state, so each rule needing it is handled by its own on_error and the decision claims
// nothing that was not applied ([OAR-FIRE-9], [OAR-OPS-3]); when the store may have
// applied a commit whose answer was lost (redisstore.ErrOutcomeUnknown), the failures
// say that it may have. found is what the decision log says of the session: its
// versions read and left when the changes were committed; the version read and the
// one the commit would have left when its outcome is unknown, so a replay can tell
// from later lines whether it was applied; else that it was unavailable. A committed
// occurrence whose correction's outcome is unknown says both: the versions its commit
// read and left, and those its correction read (the one left) and would have left.
func (s *Sidecar) evaluateShared(sv *reload.Served, occ *engine.Occurrence, buf *engine.DecisionBuffer) (d *engine.Decision, found decisionlog.Session) {
	ctx := context.Background()
	prog := sv.Loaded.Program
	store := s.opt.SharedSessions
	unavailable := decisionlog.Session{Unavailable: true}
	for attempt := 0; attempt <= s.opt.SessionRetries; attempt++ {
		if attempt > 0 {
			s.metrics.SessionRetried()
		}
		snap, err := store.Load(ctx, occ.SessionID)
		if errors.Is(err, redisstore.ErrPending) {
			s.metrics.SessionContended()
			return s.evaluateWithoutSession(sv, occ, buf, fmt.Errorf("%w: %w", ErrContention, err)), unavailable
		}
		if err != nil {
			return s.evaluateWithoutSession(sv, occ, buf, storeFailure(err)), unavailable
		}
		events := &eventBuffer{}
		rt := &engine.Runtime{Counters: snap, Activity: snap, Events: events, Detectors: sv.Runtime.Detectors}
		d = prog.EvaluateInto(rt, occ, buf)
		if len(events.pending) > 0 {
			snap.MayNeedCorrection()
		}
		ok, err := store.Commit(ctx, snap)
		if errors.Is(err, redisstore.ErrOutcomeUnknown) {
			read, sent, _ := snap.Versions()
			return s.evaluateWithoutSession(sv, occ, buf, fmt.Errorf("the session store is unreachable, and this occurrence's changes to the session may or may not have been applied: %w", err)),
				decisionlog.Session{Began: read == "", OutcomeUnknown: &decisionlog.SessionState{Read: read, Written: sent}}
		}
		if err != nil {
			return s.evaluateWithoutSession(sv, occ, buf, storeFailure(err)), unavailable
		}
		if ok {
			var unknown *decisionlog.SessionState
			d, snap, unknown = s.publishCommitted(ctx, sv, occ, d, snap, events)
			var state decisionlog.SessionState
			state.Read, state.Written, _ = snap.Versions()
			return d, decisionlog.Session{Began: state.Read == "", State: &state, OutcomeUnknown: unknown}
		}
	}
	s.metrics.SessionContended()
	return s.evaluateWithoutSession(sv, occ, buf, fmt.Errorf("%w: session %q was changed by another replica at each of %d attempts", ErrContention, occ.SessionID, s.opt.SessionRetries+1)), unavailable
}

// storeFailure is the failure of a call to the session store, as the occurrence's
// failures report it (storeState).
func storeFailure(err error) error {
	return fmt.Errorf("the session store is %s: %w", storeState(err), err)
}

// storeState is what the failure of a call to the session store says of it, in the
// answer's failures and /readyz, by its cause (redisstore.CauseOf): a server whose
// version refuses it (too old, or unreadable) is unusable; a server that answered with
// an error reply (still loading its data, busy with a script, out of memory, asking for
// a password) is refusing calls, since it was reached and an operator looking for a
// network fault would look in the wrong place; a session whose hash it cannot read
// makes it hold unreadable state; a call that had its connection and no answer in
// time finds it not answering in time; any other failure leaves it unreachable.
func storeState(err error) string {
	switch redisstore.CauseOf(err) {
	case redisstore.CauseUnusable:
		return "unusable"
	case redisstore.CauseUnreadableState:
		return "holding unreadable state"
	case redisstore.CauseRefusing:
		return "refusing calls"
	case redisstore.CauseTimeout:
		return "not answering in time"
	}
	return "unreachable"
}

func (s *Sidecar) evaluateWithoutSession(sv *reload.Served, occ *engine.Occurrence, buf *engine.DecisionBuffer, cause error) *engine.Decision {
	snap := redisstore.Unavailable(occ.SessionID, cause)
	rt := &engine.Runtime{Counters: snap, Activity: snap, Events: sv.Runtime.Events, Detectors: sv.Runtime.Detectors}
	return sv.Loaded.Program.EvaluateInto(rt, occ, buf)
}

// publishCommitted writes the events of an evaluation whose changes are committed, in
// the order the engine made them, and returns the decision that took effect and its
// snapshot. One engine publishes an event as its rule's side-effect is applied, so a
// refused one makes that rule one that cannot be evaluated ([OAR-FIRE-9]), which
// contributes no side-effect ([OAR-OPS-4]) and is handled by its on_error. To decide
// exactly so, the occurrence is evaluated once more against the session as it was read,
// with the stream's answers replayed in order — the events it took are not written
// again, the refused one is refused with the same error — and the changes of that
// evaluation replace the committed ones (redisstore.Snapshot.Correction); events it
// makes beyond those answers are written once it is committed, the same way. Other
// replicas wait for the replacement meanwhile (the pending marker the commit wrote).
// When it cannot be committed (it came after the marker expired, so other replicas may
// have read the committed changes, or another replica changed the session since, or
// the store failed), the committed decision stands: the refused event is dropped from
// its events and on_fire and reported in its failures, which say its changes stayed.
// When the correction's own outcome is unknown, unknown is the version it expected
// and the one it would have left: the session may hold either.
func (s *Sidecar) publishCommitted(ctx context.Context, sv *reload.Served, occ *engine.Occurrence, d *engine.Decision, snap *redisstore.Snapshot, events *eventBuffer) (_ *engine.Decision, _ *redisstore.Snapshot, unknown *decisionlog.SessionState) {
	for {
		refused := -1
		for i, e := range events.pending {
			if err := sv.Runtime.Events.Publish(e); err != nil {
				refused, events.refusal = i, err
				break
			}
		}
		if refused < 0 {
			return d, snap, nil
		}
		answers := slices.Concat(events.answers, make([]error, refused), []error{events.refusal})
		corr := snap.Correction()
		next := &eventBuffer{answers: answers}
		rt := &engine.Runtime{Counters: corr, Activity: corr, Events: next, Detectors: sv.Runtime.Detectors}
		cd := sv.Loaded.Program.EvaluateInto(rt, occ, &engine.DecisionBuffer{})
		if len(next.pending) > 0 {
			corr.MayNeedCorrection()
		}
		ok, err := s.opt.SharedSessions.Commit(ctx, corr)
		switch {
		case errors.Is(err, redisstore.ErrOutcomeUnknown):
			s.keepCommitted(sv, d, events, refused, "whether they were taken back is unknown: "+err.Error())
			_, left, _ := snap.Versions()
			_, sent, _ := corr.Versions()
			return d, snap, &decisionlog.SessionState{Read: left, Written: sent}
		case err != nil:
			s.keepCommitted(sv, d, events, refused, "they could not be taken back: "+err.Error())
			return d, snap, nil
		case !ok:
			s.keepCommitted(sv, d, events, refused, "they could not be taken back: another replica changed the session since")
			return d, snap, nil
		}
		d, snap, events = cd, corr, next
	}
}

// keepCommitted settles a committed decision whose changes stay although the stream
// refused events.pending[refused]: that event is dropped from the decision's events and
// on_fire and reported in its failures ([OAR-FIRE-9]), and the later ones are written,
// each refused one likewise. The engine appends an event and its publish_event entry of
// on_fire together, so the n-th event is the n-th publish_event there; the pending
// events are the decision's last ones.
func (s *Sidecar) keepCommitted(sv *reload.Served, d *engine.Decision, events *eventBuffer, refused int, why string) {
	base := len(d.Events) - len(events.pending)
	kept := d.Events[:base+refused]
	drop := func(e engine.Event, err error) {
		d.Failures = append(d.Failures, engine.Failure{Rule: e.Rule, Clause: "OAR-FIRE-9",
			Error: "publish_event: " + err.Error() + " (after the session's changes were committed; " + why + ")"})
		d.OnFire = deleteNth(d.OnFire, engine.ActionPublishEvent.String(), len(kept))
	}
	drop(events.pending[refused], events.refusal)
	for _, e := range events.pending[refused+1:] {
		if err := sv.Runtime.Events.Publish(e); err != nil {
			drop(e, err)
			continue
		}
		kept = append(kept, e)
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

// eventBuffer is an evaluation's event sink in shared mode. The first publish attempts
// get the answers the stream gave them in an earlier evaluation of the occurrence
// (publishCommitted); the others are held until the evaluation's changes are committed.
type eventBuffer struct {
	answers []error
	pending []engine.Event
	// refusal is the stream's error for the pending event it refused.
	refusal  error
	attempts int
}

func (b *eventBuffer) Publish(e engine.Event) error {
	i := b.attempts
	b.attempts++
	if i < len(b.answers) {
		return b.answers[i]
	}
	b.pending = append(b.pending, e)
	return nil
}
