package redisstore

import (
	"fmt"
	"slices"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// counts is one counter as read and as this occurrence left it.
type counts struct {
	base, now engine.Counts
	// added marks a counter the session did not hold when read.
	added bool
}

// Snapshot is one session's state as one Load read it, and the changes one
// occurrence makes to it. It implements engine.CounterStore and
// engine.FallibleActivity for that session only; an evaluation uses it from one
// goroutine.
type Snapshot struct {
	session  string
	version  string
	counters map[string]counts
	// removed holds, with its value as read, each counter the session held that the
	// occurrence set back to zero (Restore): Commit removes it, as the memory store does.
	removed       map[string]engine.Counts
	window        []string
	windowChanged bool
	// read is the window as read, window the window as the occurrence leaves it.
	read []string
	// supersedes, in a Correction, is the committed snapshot whose changes its Commit
	// replaces.
	supersedes *Snapshot
	// cached marks a snapshot of the replica's cached state, whose version Commit
	// checks even when nothing changed.
	cached bool
	// correctable marks an evaluation that may yet need a Correction, whose Commit
	// holds the session pending (MayNeedCorrection).
	correctable bool
	maxCounters int
	// written is the version a successful Commit left (committed set): the new one
	// when the occurrence changed the session, else version; after a Commit whose
	// outcome is unknown, the new version it sent.
	written   string
	committed bool
	// err, when set, makes every read and write fail: the store could not be read, or
	// the session stayed contended past the retry bound.
	err error
}

var (
	_ engine.CounterStore     = (*Snapshot)(nil)
	_ engine.FallibleActivity = (*Snapshot)(nil)
)

// Unavailable returns a snapshot of a session whose state cannot be had: every read
// and write fails with err, so each rule needing the state is handled by its own
// on_error ([OAR-OPS-3], [OAR-FIRE-9]) and nothing is claimed as applied.
func Unavailable(session string, err error) *Snapshot {
	return &Snapshot{session: session, err: err}
}

// field is the hash field of a counter.
func field(k engine.CounterKey) string {
	if k.Scoped {
		return "s" + k.Rule + "\x00" + k.Scope
	}
	return "c" + k.Rule
}

func (s *Snapshot) check(k engine.CounterKey) error {
	if s.err != nil {
		return s.err
	}
	if k.Session != s.session {
		return fmt.Errorf("the snapshot of session %q was asked for session %q", s.session, k.Session)
	}
	return nil
}

// Get implements engine.CounterStore.
func (s *Snapshot) Get(k engine.CounterKey) (engine.Counts, error) {
	if err := s.check(k); err != nil {
		return engine.Counts{}, err
	}
	return s.counters[field(k)].now, nil
}

// Apply implements engine.CounterStore: the change is kept until Commit.
func (s *Snapshot) Apply(k engine.CounterKey, a engine.Action) (engine.Counts, error) {
	if err := s.check(k); err != nil {
		return engine.Counts{}, err
	}
	f := field(k)
	c, ok := s.counters[f]
	if !ok {
		if s.maxCounters > 0 && len(s.counters) >= s.maxCounters {
			return engine.Counts{}, fmt.Errorf("session %q already holds %d counters, cannot add %s: %w", s.session, len(s.counters), diag.Truncate(k.ReportKey()), ErrCounterLimit)
		}
		c.added = true
	}
	c.now = c.now.After(a)
	s.counters[f] = c
	return c.now, nil
}

// Restore implements engine.CounterStore. A counter set back to zero is removed, as the
// memory store removes it, so both bound a session's counters alike: Commit writes
// nothing for one the occurrence added and removes one the session held.
func (s *Snapshot) Restore(k engine.CounterKey, c engine.Counts) error {
	if err := s.check(k); err != nil {
		return err
	}
	f := field(k)
	now, ok := s.counters[f]
	switch {
	case ok && c == engine.Counts{}:
		delete(s.counters, f)
		if !now.added {
			if s.removed == nil {
				s.removed = map[string]engine.Counts{}
			}
			s.removed[f] = now.base
		}
	case ok:
		now.now = c
		s.counters[f] = now
	case c != engine.Counts{}:
		return fmt.Errorf("session %q holds no counter %s to restore", s.session, diag.Truncate(k.ReportKey()))
	}
	return nil
}

// Window implements engine.ActivityStore.
func (s *Snapshot) Window(string) []string { return s.window }

// WindowErr implements engine.FallibleActivity.
func (s *Snapshot) WindowErr(string) ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.window, nil
}

// Append implements engine.ActivityStore, keeping the newest max steps; the step is
// kept until Commit. An unavailable snapshot drops it: the decision claims no step.
func (s *Snapshot) Append(_, step string, max int) {
	if max <= 0 || s.err != nil {
		return
	}
	old := s.window
	if len(old) >= max {
		old = old[len(old)-max+1:]
	}
	w := make([]string, len(old), len(old)+1)
	copy(w, old)
	s.window = append(w, step)
	s.windowChanged = true
}

// MayNeedCorrection marks the snapshot's evaluation as one that may yet need a
// Correction: it has events to publish once its changes are committed, and the stream
// may refuse one. Its Commit then also holds the session pending for
// Options.PendingTTL, so other replicas' loads wait for the Correction rather than
// decide on changes it takes back. An evaluation with no event to publish cannot need
// a correction, and its Commit costs nothing more.
func (s *Snapshot) MayNeedCorrection() { s.correctable = true }

// Versions reports the session's version the snapshot was read at and the one its
// Commit left: a new one when the occurrence changed the session, else the one read.
// read is empty when the session did not exist. committed is false until a Commit of
// the snapshot succeeded; the versions are then the occurrence's place in the order
// the session's occurrences took effect, across replicas (the decision log records
// them so a replay follows that order). After a Commit whose outcome is unknown
// (ErrOutcomeUnknown), committed is false and written is the version it sent: a
// later reader of that version proves it was applied.
func (s *Snapshot) Versions() (read, written string, committed bool) {
	return s.version, s.written, s.committed
}

// changes returns the version the session must still be at for a Commit, the counter
// fields it writes as field, value pairs (an empty value removes the field) and whether
// it writes the window. A snapshot writes what the occurrence changed; a Correction
// writes what differs from what the corrected Commit left.
func (s *Snapshot) changes() (expect string, fields []any, window bool) {
	if s.err != nil {
		return s.version, nil, false
	}
	if p := s.supersedes; p != nil {
		for f, c := range s.counters {
			if was, ok := p.counters[f]; !ok || was.now != c.now {
				fields = append(fields, f, formatCounts(c.now))
			}
		}
		for f := range p.counters {
			if _, ok := s.counters[f]; !ok {
				fields = append(fields, f, "")
			}
		}
		return p.written, fields, !slices.Equal(s.window, p.window)
	}
	for f, c := range s.counters {
		if c.added || c.now != c.base {
			fields = append(fields, f, formatCounts(c.now))
		}
	}
	for f := range s.removed {
		if _, ok := s.counters[f]; !ok {
			fields = append(fields, f, "")
		}
	}
	return s.version, fields, s.windowChanged
}

// correctsWrite reports whether s is a Correction of a commit that wrote the session
// (and so its pending marker): one whose commit changed nothing left the version it
// read, wrote no marker and exposed nothing to other replicas.
func (s *Snapshot) correctsWrite() bool {
	p := s.supersedes
	return p != nil && p.written != p.version
}

// Correction returns a snapshot of the session as s read it, for evaluating s's
// occurrence again after its committed evaluation turned out not to be the one that
// took effect (the event stream refused an event of it, so that rule contributes no
// side-effect, [OAR-OPS-4]). Its Commit replaces what s's Commit left, only if the
// session is still at the version s's Commit left and s's pending marker still holds
// it (see MayNeedCorrection); its Versions then report the version s read and the one
// it left in turn. s must be committed.
func (s *Snapshot) Correction() *Snapshot {
	c := &Snapshot{session: s.session, version: s.version, window: s.read, read: s.read,
		maxCounters: s.maxCounters, counters: make(map[string]counts, len(s.counters)), supersedes: s}
	for f, n := range s.counters {
		if !n.added {
			c.counters[f] = counts{base: n.base, now: n.base}
		}
	}
	for f, base := range s.removed {
		c.counters[f] = counts{base: base, now: base}
	}
	return c
}
