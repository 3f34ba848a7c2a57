package sidecar

import (
	"hash/maphash"
	"sync"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

// sessionLockStripes is how many parts the table of session locks is split into, so
// that taking one rarely waits for another session's.
const sessionLockStripes = 256

// maxFreeLocks is how many unused locks a stripe keeps for its next sessions, and how
// many sessions it may have held at once for its table to be kept once it empties:
// enough for a stripe's share of a few thousand sessions evaluated at once to take and
// release locks without allocating, few enough that what a burst beyond that leaves
// behind goes to the GC (a map does not shrink as its entries are deleted).
const maxFreeLocks = 8

// sessionLocks serialise the evaluations of one session. An agent making parallel tool
// calls sends one session's occurrences concurrently; evaluated at once, two could read
// a counter before either applies its increment, and a rule that blocks the Nth call
// would let more through. Held around the whole evaluation, a session's lock makes its
// occurrences take effect one after the other — the semantics of [OAR-CONF-31], where
// each occurrence's side-effects are applied before the next is evaluated — whatever
// order they arrive in. Each session being evaluated has a lock of its own, so one that
// waits (for the shared store, or another replica's pending marker) holds back no other
// session; the table holds only those sessions, split into stripes whose mutexes are
// held just to find or drop an entry, and a few unused locks per stripe to reuse.
type sessionLocks [sessionLockStripes]lockStripe

type lockStripe struct {
	mu   sync.Mutex
	held map[string]*sessionLock
	// peak is the most sessions held has held at once.
	peak int
	// free holds up to maxFreeLocks locks no session uses any more, for the next
	// session to take instead of allocating one; a lock whose users fell to zero under
	// mu is referenced by nobody but free.
	free []*sessionLock
}

// sessionLock is one session's lock, how many evaluations hold or await it, and where
// it is held, so releasing it hashes the session no second time.
type sessionLock struct {
	sync.Mutex
	users   int
	stripe  *lockStripe
	session string
}

var sessionSeed = maphash.MakeSeed()

func stripeOf(session string) int {
	return int(maphash.String(sessionSeed, session) % sessionLockStripes)
}

// lock takes the session's lock and returns it for unlock.
func (l *sessionLocks) lock(session string) *sessionLock {
	st := &l[stripeOf(session)]
	st.mu.Lock()
	sl := st.held[session]
	if sl == nil {
		if st.held == nil {
			st.held = map[string]*sessionLock{}
		}
		if n := len(st.free); n > 0 {
			sl = st.free[n-1]
			st.free[n-1] = nil
			st.free = st.free[:n-1]
		} else {
			sl = &sessionLock{stripe: st}
		}
		sl.session = session
		st.held[session] = sl
		st.peak = max(st.peak, len(st.held))
	}
	sl.users++
	st.mu.Unlock()
	sl.Lock()
	return sl
}

// unlock releases a lock taken by lock.
func (l *sessionLocks) unlock(sl *sessionLock) {
	sl.Unlock()
	st := sl.stripe
	st.mu.Lock()
	if sl.users--; sl.users == 0 {
		delete(st.held, sl.session)
		sl.session = ""
		if len(st.free) < maxFreeLocks {
			st.free = append(st.free, sl)
		}
		if len(st.held) == 0 && st.peak > maxFreeLocks {
			st.held, st.peak = nil, 0
		}
	}
	st.mu.Unlock()
}

// evaluateInSession evaluates occ into buf with sv holding its session's lock; a panic
// in the engine (recovered by the handler) releases it too. In the sidecar's own store
// the session is also pinned, from before the evaluation until its line is logged: it
// reads and writes one state throughout, whatever other sessions' calls evict
// meanwhile, and that state began exactly when the pin found none held, which is what
// the line's session_began says. The decision is handed to the decision log before the
// lock is released, so one replica's log holds a session's lines in the order they took
// effect, their times taken in that order; with shared sessions a committed
// occurrence's line also carries the session's versions, which order it among the
// other replicas' lines whatever their clocks say, and one answered without its
// session (evaluateWithoutSession) says so: that it changed nothing of the session, or
// that its commit may or may not have been applied. size is the heap occ takes, which
// its line keeps while it waits to be written.
func (s *Sidecar) evaluateInSession(sv *reload.Served, occ *engine.Occurrence, size int64, buf *engine.DecisionBuffer) *engine.Decision {
	defer s.sessionLocks.unlock(s.sessionLocks.lock(occ.SessionID))
	var (
		d     *engine.Decision
		found decisionlog.Session
	)
	switch uses := sv.Loaded.Program.UsesSession(occ.Anchor); {
	case uses && s.opt.SharedSessions != nil:
		d, found = s.evaluateShared(sv, occ, buf)
	case uses:
		found.Began = !s.sessions.Pin(occ.SessionID)
		defer s.sessions.Unpin(occ.SessionID)
		d = sv.Loaded.Program.EvaluateInto(sv.Runtime, occ, buf)
	default:
		d = sv.Loaded.Program.EvaluateInto(sv.Runtime, occ, buf)
	}
	if s.opt.DecisionLog != nil {
		s.opt.DecisionLog.Log(sv.Digest(), occ, size, d, found)
	}
	return d
}
