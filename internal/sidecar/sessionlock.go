package sidecar

import (
	"hash/maphash"
	"sync"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

// sessionLockStripes is how many locks the sessions share: enough that unrelated
// sessions rarely wait for each other, few enough to cost nothing.
const sessionLockStripes = 256

// sessionLocks serialise the evaluations of one session. An agent making parallel tool
// calls sends one session's occurrences concurrently; evaluated at once, two could read
// a counter before either applies its increment, and a rule that blocks the Nth call
// would let more through. Held around the whole evaluation, a session's lock makes its
// occurrences take effect one after the other — the semantics of [OAR-CONF-31], where
// each occurrence's side-effects are applied before the next is evaluated — whatever
// order they arrive in. Sessions are striped over a fixed set of locks, so the table
// never grows.
type sessionLocks [sessionLockStripes]sync.Mutex

var sessionSeed = maphash.MakeSeed()

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
// that its commit may or may not have been applied.
func (s *Sidecar) evaluateInSession(sv *reload.Served, occ *engine.Occurrence, buf *engine.DecisionBuffer) *engine.Decision {
	m := &s.sessionLocks[maphash.String(sessionSeed, occ.SessionID)%sessionLockStripes]
	m.Lock()
	defer m.Unlock()
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
		s.opt.DecisionLog.Log(sv.Digest(), occ, d, found)
	}
	return d
}
