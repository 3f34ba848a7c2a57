package session

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Unix(1_700_000_000, 0)} }
func key(rule, session string) engine.CounterKey {
	return engine.CounterKey{Rule: rule, Session: session}
}

func mustApply(t *testing.T, s *Store, k engine.CounterKey, a engine.Action) engine.Counts {
	t.Helper()
	c, err := s.Apply(k, a)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCountersMatchTheEngine drives the store and the engine's reference MemoryCounters
// with the same random actions: [OAR-FIRE-3] and [OAR-FIRE-4] mean the same here.
func TestCountersMatchTheEngine(t *testing.T) {
	s := New(Options{})
	ref := engine.NewMemoryCounters()
	actions := []engine.Action{engine.ActionIncrementCounter, engine.ActionResetCounter, engine.ActionIncrementBreaker, engine.ActionResetBreaker}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		k := engine.CounterKey{Rule: fmt.Sprintf("r%d", r.IntN(10)), Session: fmt.Sprintf("s%d", r.IntN(3)), Scope: fmt.Sprintf("%d", r.IntN(5)), Scoped: r.IntN(2) == 0}
		a := actions[r.IntN(len(actions))]
		got := mustApply(t, s, k, a)
		want, _ := ref.Apply(k, a)
		if got != want {
			t.Fatalf("%+v after %v: %+v, the engine's store %+v", k, a, got, want)
		}
		if g, _ := s.Get(k); g != want {
			t.Fatalf("Get %+v: %+v, want %+v", k, g, want)
		}
	}
}

// TestCounterKeys is [OAR-FIRE-5] and [OAR-FIRE-10]: one counter per rule, session and
// scope value, an empty scope distinct from no scope.
func TestCounterKeys(t *testing.T) {
	s := New(Options{})
	keys := []engine.CounterKey{
		{Rule: "a/R", Session: "s1"},
		{Rule: "a/R", Session: "s2"},
		{Rule: "b/R", Session: "s1"},
		{Rule: "a/R", Session: "s1", Scope: "", Scoped: true},
		{Rule: "a/R", Session: "s1", Scope: "x", Scoped: true},
	}
	for i, k := range keys {
		for range i + 1 {
			mustApply(t, s, k, engine.ActionIncrementCounter)
		}
	}
	for i, k := range keys {
		if c, _ := s.Get(k); c.Fire != int64(i+1) {
			t.Errorf("%+v: fire_count %d, want %d", k, c.Fire, i+1)
		}
	}
	if c, _ := s.Get(key("a/R", "unknown")); c != (engine.Counts{}) || s.Len() != 2 {
		t.Errorf("reading an unknown session: %+v, %d sessions (a read must not create one)", c, s.Len())
	}
}

// TestWindow is [OAR-PROF-9]: at most max steps, oldest first, and a window handed out
// never changes under its reader.
func TestWindow(t *testing.T) {
	s := New(Options{})
	for _, step := range []string{"a", "b", "c"} {
		s.Append("s", step, 2)
	}
	w := s.Window("s")
	if !slices.Equal(w, []string{"b", "c"}) {
		t.Fatalf("window %v", w)
	}
	s.Append("s", "d", 2)
	if !slices.Equal(w, []string{"b", "c"}) || !slices.Equal(s.Window("s"), []string{"c", "d"}) {
		t.Errorf("old window %v, new %v", w, s.Window("s"))
	}
	s.Append("s", "e", 0)
	if s.Window("other") != nil || !slices.Equal(s.Window("s"), []string{"c", "d"}) {
		t.Errorf("a zero window appended, or another session has steps")
	}
}

// TestWindowTakesRoomForItsSteps: a window's list grows with the steps it holds, not
// with the capability's activity_window (up to 2^20 places, which every session's first
// call used to allocate), stays within twice them once full, and is given back when the
// window shrinks; the steps are [OAR-PROF-9]'s, and a window handed out never changes.
func TestWindowTakesRoomForItsSteps(t *testing.T) {
	s := New(Options{})
	s.Append("wide", "read", 1<<20)
	checkTable(t, s)
	var (
		all    []string
		handed [][]string
		copies [][]string
	)
	for i := range 3000 {
		step := fmt.Sprint(i)
		all = append(all, step)
		s.Append("s", step, 1000)
		if i%97 == 0 {
			checkTable(t, s)
			w := s.Window("s")
			handed, copies = append(handed, w), append(copies, slices.Clone(w))
		}
	}
	checkTable(t, s)
	if w := s.Window("s"); !slices.Equal(w, all[len(all)-1000:]) {
		t.Fatalf("window of %d steps from %q, want the last 1,000", len(w), w[0])
	}
	for i := range handed {
		if !slices.Equal(handed[i], copies[i]) {
			t.Fatalf("window %d changed after it was handed out", i)
		}
	}
	s.Append("s", "last", 10)
	checkTable(t, s)
	if w := s.Window("s"); !slices.Equal(w, append(slices.Clone(all[len(all)-9:]), "last")) {
		t.Errorf("window %q after activity_window became 10", w)
	}
}

// TestLRUEviction: the least recently used session goes first, where any access counts.
func TestLRUEviction(t *testing.T) {
	s := New(Options{MaxSessions: 3})
	for _, id := range []string{"s1", "s2", "s3"} {
		mustApply(t, s, key("r", id), engine.ActionIncrementCounter)
	}
	_ = s.Window("s1")                                             // s1 used: s2 is now the oldest
	mustApply(t, s, key("r", "s4"), engine.ActionIncrementCounter) // evicts s2
	s.Append("s5", "read", 4)                                      // evicts s3
	if s.Len() != 3 {
		t.Fatalf("%d sessions, want 3", s.Len())
	}
	for id, want := range map[string]int64{"s1": 1, "s2": 0, "s3": 0, "s4": 1} {
		if c, _ := s.Get(key("r", id)); c.Fire != want {
			t.Errorf("%s: fire_count %d, want %d", id, c.Fire, want)
		}
	}
	if lru, ttl := s.Evictions(); lru != 2 || ttl != 0 {
		t.Errorf("evictions lru %d ttl %d, want 2 and 0", lru, ttl)
	}
}

// TestIdleTTL: a session idle longer than the TTL is forgotten, by a lookup or a sweep.
func TestIdleTTL(t *testing.T) {
	c := newClock()
	s := New(Options{IdleTTL: time.Minute, Now: c.now})
	mustApply(t, s, key("r", "old"), engine.ActionIncrementCounter)
	s.Append("old", "read", 4)
	c.advance(40 * time.Second)
	mustApply(t, s, key("r", "recent"), engine.ActionIncrementCounter)
	c.advance(40 * time.Second) // old idle 80 s, recent 40 s
	if got, _ := s.Get(key("r", "old")); got.Fire != 0 || s.Window("old") != nil {
		t.Errorf("an expired session still answers: %+v", got)
	}
	if got, _ := s.Get(key("r", "recent")); got.Fire != 1 {
		t.Errorf("a live session lost its counter: %+v", got)
	}
	c.advance(61 * time.Second)
	s.Sweep()
	if s.Len() != 0 {
		t.Errorf("%d sessions after the sweep, want 0", s.Len())
	}
	if lru, ttl := s.Evictions(); lru != 0 || ttl != 2 {
		t.Errorf("evictions lru %d ttl %d, want 0 and 2", lru, ttl)
	}
	// Use keeps a session alive.
	for range 5 {
		s.Append("busy", "read", 4)
		c.advance(50 * time.Second)
	}
	if len(s.Window("busy")) != 4 {
		t.Errorf("a session used every 50 s expired with a 60 s TTL")
	}
}

// TestPinReportsHeld: Pin reports whether the session holds state: not before its
// first change, nor once it is idle past the TTL, which Pin forgets there and then.
// Pinning neither creates a session nor counts as using it: it keeps no idle session
// alive and saves none from the LRU bound once unpinned.
func TestPinReportsHeld(t *testing.T) {
	c := newClock()
	s := New(Options{IdleTTL: time.Minute, MaxSessions: 2, Now: c.now})
	if s.Pin("a") || s.Len() != 0 {
		t.Fatal("a session never changed is held, or pinning created it")
	}
	mustApply(t, s, key("r", "a"), engine.ActionIncrementCounter)
	s.Unpin("a")
	if !s.Pin("a") {
		t.Fatal("a changed session is not held")
	}
	s.Unpin("a")
	for range 2 {
		c.advance(30 * time.Second)
		s.Pin("a")
		s.Unpin("a")
	}
	c.advance(30 * time.Second) // 90 s since a was used
	if s.Pin("a") {
		t.Error("pinning kept an idle session alive")
	}
	if got, _ := s.Get(key("r", "a")); got.Fire != 0 || s.Len() != 0 {
		t.Errorf("a, found not held: %+v, %d sessions: the pinned session kept its old state", got, s.Len())
	}
	s.Unpin("a")
	if lru, ttl := s.Evictions(); lru != 0 || ttl != 1 {
		t.Errorf("evictions lru %d ttl %d, want 0 and 1", lru, ttl)
	}
	mustApply(t, s, key("r", "b"), engine.ActionIncrementCounter)
	mustApply(t, s, key("r", "c"), engine.ActionIncrementCounter)
	s.Pin("b")
	s.Unpin("b")
	mustApply(t, s, key("r", "d"), engine.ActionIncrementCounter)
	if s.Pin("b") {
		t.Error("pinning b saved it from the LRU bound")
	}
	s.Unpin("b")
}

// TestPinnedSessionIsNotEvicted: the LRU bound passes over pinned sessions, one created
// while pinned too. When every session held is pinned a new one is added over the
// bound, and the next creation once they are unpinned evicts back within it.
func TestPinnedSessionIsNotEvicted(t *testing.T) {
	s := New(Options{MaxSessions: 2})
	mustApply(t, s, key("r", "a"), engine.ActionIncrementCounter)
	mustApply(t, s, key("r", "b"), engine.ActionIncrementCounter)
	s.Pin("a")                                                    // a is the least recently used
	mustApply(t, s, key("r", "c"), engine.ActionIncrementCounter) // evicts b
	mustApply(t, s, key("r", "d"), engine.ActionIncrementCounter) // evicts c
	if got, _ := s.Get(key("r", "a")); got.Fire != 1 || s.Len() != 2 {
		t.Fatalf("pinned session a: %+v, %d sessions: another session's creation evicted it", got, s.Len())
	}
	if s.Pin("e") {
		t.Fatal("e held before its first change")
	}
	mustApply(t, s, key("r", "e"), engine.ActionIncrementCounter) // evicts d, the only one unpinned
	mustApply(t, s, key("r", "f"), engine.ActionIncrementCounter) // a and e pinned: over the bound
	if s.Len() != 3 {
		t.Fatalf("%d sessions, want 3: a, e (pinned) and f", s.Len())
	}
	for _, id := range []string{"a", "e"} {
		if got, _ := s.Get(key("r", id)); got.Fire != 1 {
			t.Errorf("pinned session %s: %+v", id, got)
		}
	}
	s.Unpin("a")
	s.Unpin("e")
	mustApply(t, s, key("r", "g"), engine.ActionIncrementCounter) // evicts f, then a: back within the bound
	if s.Len() != 2 {
		t.Errorf("%d sessions after the pins ended, want 2", s.Len())
	}
	if lru, _ := s.Evictions(); lru != 5 {
		t.Errorf("%d sessions evicted, want 5 (b, c, d, f, a)", lru)
	}
	for id, want := range map[string]int64{"e": 1, "g": 1, "a": 0, "f": 0} {
		if got, _ := s.Get(key("r", id)); got.Fire != want {
			t.Errorf("%s: fire_count %d, want %d", id, got.Fire, want)
		}
	}
}

// TestPinnedSessionDoesNotExpire: a pinned session idle past the TTL is neither
// forgotten by a sweep nor by a lookup (its own, which answers its state, or another
// session's creation); unpinned, it is.
func TestPinnedSessionDoesNotExpire(t *testing.T) {
	c := newClock()
	s := New(Options{IdleTTL: time.Minute, Now: c.now})
	mustApply(t, s, key("r", "a"), engine.ActionIncrementCounter)
	mustApply(t, s, key("r", "z"), engine.ActionIncrementCounter)
	if !s.Pin("a") || !s.Pin("z") {
		t.Fatal("a changed session is not held")
	}
	c.advance(2 * time.Minute)
	s.Sweep()
	mustApply(t, s, key("r", "b"), engine.ActionIncrementCounter)
	if got, _ := s.Get(key("r", "z")); got.Fire != 1 || s.Len() != 3 {
		t.Fatalf("pinned session z idle past the TTL: %+v, %d sessions: it expired while pinned", got, s.Len())
	}
	s.Unpin("a")
	s.Unpin("z")
	s.Sweep() // a is idle; z was used by the lookup, b is new
	if got, _ := s.Get(key("r", "a")); got.Fire != 0 || s.Len() != 2 {
		t.Errorf("a, idle and unpinned: %+v, %d sessions, want it forgotten", got, s.Len())
	}
	if lru, ttl := s.Evictions(); lru != 0 || ttl != 1 {
		t.Errorf("evictions lru %d ttl %d, want 0 and 1", lru, ttl)
	}
}

// TestCounterLimit: a session cannot hold more than MaxCounters counters; the refusal
// is an error the engine routes to on_error ([OAR-FIRE-9]).
func TestCounterLimit(t *testing.T) {
	s := New(Options{MaxCounters: 2})
	scoped := func(scope string) engine.CounterKey {
		return engine.CounterKey{Rule: "r", Session: "s", Scope: scope, Scoped: true}
	}
	mustApply(t, s, scoped("a"), engine.ActionIncrementCounter)
	mustApply(t, s, scoped("b"), engine.ActionIncrementCounter)
	if _, err := s.Apply(scoped("c"), engine.ActionIncrementCounter); !errors.Is(err, ErrCounterLimit) {
		t.Fatalf("a third counter: %v, want ErrCounterLimit", err)
	}
	if c := mustApply(t, s, scoped("a"), engine.ActionIncrementCounter); c.Fire != 2 {
		t.Errorf("an existing counter after the refusal: %+v", c)
	}
}

// TestByteBound: what sessions take is bounded in bytes together (MaxBytes): their
// states, counters and windows, and the text occurrences supply and can make as long
// as a request. A long scope forgets the least recently used other sessions to make
// room; a scope no eviction makes room for is refused as a counter past a bound is
// (ErrCounterLimit, the rule's on_error); a window is kept even past the bound, since a
// step cannot be refused. Restoring a counter to zero and dropping old steps give their
// bytes back.
func TestByteBound(t *testing.T) {
	// Room for two one-letter sessions with a 400-byte scope each, not for a third, nor
	// for a window of three 400-byte steps beside any other session.
	perSession := sessionBytes + TextBytes("a") + counterBytes + 400
	s := New(Options{MaxBytes: 2*perSession + 4*stepBytes})
	long := func(c string) string { return strings.Repeat(c, 400) }
	scoped := func(session, scope string) engine.CounterKey {
		return engine.CounterKey{Rule: "r", Session: session, Scope: scope, Scoped: true}
	}
	mustApply(t, s, scoped("a", long("a")), engine.ActionIncrementCounter)
	mustApply(t, s, scoped("b", long("b")), engine.ActionIncrementCounter)
	checkTable(t, s)
	// A third session with a 400-byte scope passes the bound: a, used least recently,
	// is forgotten.
	mustApply(t, s, scoped("c", long("c")), engine.ActionIncrementCounter)
	if got, _ := s.Get(scoped("a", long("a"))); got.Fire != 0 {
		t.Errorf("a was kept past the text bound: fire_count %d", got.Fire)
	}
	if got, _ := s.Get(scoped("b", long("b"))); got.Fire != 1 {
		t.Errorf("b was forgotten: fire_count %d", got.Fire)
	}
	checkTable(t, s)
	// Pinned, b and c cannot be evicted: a scope needing their room is refused.
	s.Pin("b")
	s.Pin("c")
	if _, err := s.Apply(scoped("d", long("d")), engine.ActionIncrementCounter); !errors.Is(err, ErrCounterLimit) || !strings.Contains(err.Error(), "--max-session-bytes") {
		t.Errorf("a scope past the bound with every other session pinned: %v, want ErrCounterLimit", err)
	}
	s.Unpin("b")
	s.Unpin("c")
	checkTable(t, s)
	// Set back to zero, c's counter gives its bytes back.
	if err := s.Restore(scoped("c", long("c")), engine.Counts{}); err != nil {
		t.Fatal(err)
	}
	checkTable(t, s)
	// A window of long steps forgets other sessions, and is kept past the bound alone.
	for i := range 4 {
		s.Append("w", long(fmt.Sprint(i)), 3)
		checkTable(t, s)
	}
	if got := len(s.Window("w")); got != 3 {
		t.Errorf("window of %d steps, want 3", got)
	}
	if s.Len() != 1 {
		t.Errorf("%d sessions held beside a window of 1,200 bytes of steps, want it alone", s.Len())
	}
}

// TestRestore: Restore sets a counter back to what it held before an occurrence, as
// the engine does for a rule whose later side-effect failed ([OAR-OPS-4]); a counter
// set back to zero no longer counts against the bounds, and one the store does not hold
// cannot be set to anything else.
func TestRestore(t *testing.T) {
	s := New(Options{MaxCounters: 1})
	a := engine.CounterKey{Rule: "r", Session: "s", Scope: "a", Scoped: true}
	b := engine.CounterKey{Rule: "r", Session: "s", Scope: "b", Scoped: true}
	mustApply(t, s, a, engine.ActionIncrementCounter)
	mustApply(t, s, a, engine.ActionIncrementBreaker)
	if err := s.Restore(a, engine.Counts{Fire: 1}); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Get(a); c != (engine.Counts{Fire: 1}) {
		t.Errorf("restored to %+v, want fire_count 1", c)
	}
	if err := s.Restore(a, engine.Counts{}); err != nil {
		t.Fatal(err)
	}
	if c := mustApply(t, s, b, engine.ActionIncrementCounter); c.Fire != 1 {
		t.Errorf("counter b: %+v", c)
	}
	if err := s.Restore(a, engine.Counts{Fire: 3}); err == nil {
		t.Error("a counter the store does not hold was restored to a value")
	}
}

// TestTotalCounterLimit: all sessions together hold at most MaxTotalCounters; a new
// counter makes room by evicting the least recently used sessions, never the one it
// belongs to, and is refused when that session is the only one left.
func TestTotalCounterLimit(t *testing.T) {
	s := New(Options{MaxTotalCounters: 4})
	scoped := func(session, scope string) engine.CounterKey {
		return engine.CounterKey{Rule: "r", Session: session, Scope: scope, Scoped: true}
	}
	mustApply(t, s, scoped("old", "a"), engine.ActionIncrementCounter)
	mustApply(t, s, scoped("old", "b"), engine.ActionIncrementCounter)
	mustApply(t, s, scoped("mid", "a"), engine.ActionIncrementCounter)
	mustApply(t, s, scoped("new", "a"), engine.ActionIncrementCounter)
	mustApply(t, s, scoped("new", "a"), engine.ActionIncrementCounter) // no new counter: nothing evicted
	if s.Len() != 3 {
		t.Fatalf("%d sessions, want 3", s.Len())
	}
	mustApply(t, s, scoped("new", "b"), engine.ActionIncrementCounter) // 5th counter: old goes
	if c, _ := s.Get(scoped("old", "a")); c.Fire != 0 || s.Len() != 2 {
		t.Errorf("old session still held (%+v, %d sessions); it was the least recently used", c, s.Len())
	}
	if c, _ := s.Get(scoped("new", "a")); c.Fire != 2 {
		t.Errorf("the session adding a counter lost its own: %+v", c)
	}
	mustApply(t, s, scoped("new", "c"), engine.ActionIncrementCounter)
	mustApply(t, s, scoped("new", "d"), engine.ActionIncrementCounter) // evicts mid: new holds all 4
	if _, err := s.Apply(scoped("new", "e"), engine.ActionIncrementCounter); !errors.Is(err, ErrCounterLimit) {
		t.Fatalf("a fifth counter in the only session: %v, want ErrCounterLimit", err)
	}
	if lru, _ := s.Evictions(); lru != 2 {
		t.Errorf("%d sessions evicted, want 2", lru)
	}
	mustApply(t, s, scoped("other", "a"), engine.ActionIncrementCounter) // evicts new, whole
	if s.Len() != 1 {
		t.Errorf("%d sessions, want 1", s.Len())
	}
}

// TestTotalCounterLimitSkipsPinned: room for a new counter is made by evicting the least
// recently used session that is not pinned; with every other session pinned the counter
// is refused, as when the session is the only one left.
func TestTotalCounterLimitSkipsPinned(t *testing.T) {
	s := New(Options{MaxTotalCounters: 2})
	mustApply(t, s, key("r", "old"), engine.ActionIncrementCounter)
	mustApply(t, s, key("r", "mid"), engine.ActionIncrementCounter)
	s.Pin("old")
	mustApply(t, s, key("r", "new"), engine.ActionIncrementCounter) // evicts mid, not old
	if got, _ := s.Get(key("r", "old")); got.Fire != 1 {
		t.Fatalf("pinned session old: %+v: evicted for another session's counter", got)
	}
	if got, _ := s.Get(key("r", "mid")); got.Fire != 0 {
		t.Errorf("mid: %+v, want it evicted", got)
	}
	if _, err := s.Apply(key("q", "new"), engine.ActionIncrementCounter); !errors.Is(err, ErrCounterLimit) {
		t.Fatalf("a counter with every other session pinned: %v, want ErrCounterLimit", err)
	}
	if got, _ := s.Get(key("r", "old")); got.Fire != 1 {
		t.Fatalf("pinned session old: %+v after the refusal", got)
	}
	s.Unpin("old")
	mustApply(t, s, key("q", "new"), engine.ActionIncrementCounter) // evicts old
	if s.Len() != 1 {
		t.Errorf("%d sessions, want new alone", s.Len())
	}
}

// TestConcurrentUse exercises the store from many goroutines (run with -race), each
// call's reads and writes of a session under a pin, as the sidecar makes them: a
// counter never goes back while its session is pinned, however many others evict.
func TestConcurrentUse(t *testing.T) {
	s := New(Options{MaxSessions: 50})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				id := fmt.Sprintf("s%d", (g*7+i)%80)
				s.Pin(id)
				before, _ := s.Get(key("r", id))
				_ = s.Window(id)
				after, err := s.Apply(key("r", id), engine.ActionIncrementCounter)
				s.Append(id, "read", 8)
				s.Unpin(id)
				if err != nil || after.Fire <= before.Fire {
					t.Errorf("%s: fire_count %d after %d (%v): evicted while pinned", id, after.Fire, before.Fire, err)
					return
				}
			}
		})
	}
	wg.Wait()
	pinned := len(s.pinsBeforeState)
	for _, st := range s.byID {
		pinned += st.pins
	}
	if s.Len() > 50 || pinned != 0 {
		t.Errorf("%d sessions held, the bound is 50; %d pins not unpinned", s.Len(), pinned)
	}
}

func BenchmarkStore(b *testing.B) { benchmarkStore(b, false) }

// BenchmarkStorePinned is BenchmarkStore with each session's read and write under a pin,
// as the sidecar makes them: the difference is what pinning adds to an evaluation.
func BenchmarkStorePinned(b *testing.B) { benchmarkStore(b, true) }

// benchmarkStore reads a window and applies a counter of one of 10,000 sessions after
// another from every processor, each session pinned around them when pinned.
func benchmarkStore(b *testing.B, pinned bool) {
	s := New(Options{IdleTTL: time.Hour})
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprintf("session-%d", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			id := ids[i%len(ids)]
			if pinned {
				s.Pin(id)
			}
			_ = s.Window(id)
			_, _ = s.Apply(key("r", id), engine.ActionIncrementCounter)
			if pinned {
				s.Unpin(id)
			}
			i++
		}
	})
}

// TestPinnedSessionIsUsedWhenUnpinned: an evaluation's reads and writes of its pinned
// session do not read the clock; the session is marked used, and most recent, when it
// is unpinned, if anything read or wrote it meanwhile, so idleness counts from the end
// of its last evaluation and the recency list stays in order of use.
func TestPinnedSessionIsUsedWhenUnpinned(t *testing.T) {
	c := newClock()
	reads := 0
	s := New(Options{IdleTTL: time.Minute, MaxSessions: 2, Now: func() time.Time { reads++; return c.now() }})
	mustApply(t, s, key("r", "a"), engine.ActionIncrementCounter)
	c.advance(time.Second)
	mustApply(t, s, key("r", "b"), engine.ActionIncrementCounter)

	s.Pin("a")
	reads = 0
	c.advance(50 * time.Second)
	for range 3 {
		if _, err := s.Get(key("r", "a")); err != nil {
			t.Fatal(err)
		}
	}
	mustApply(t, s, key("r", "a"), engine.ActionIncrementCounter)
	s.Append("a", "read", 4)
	s.Window("a")
	if reads != 0 {
		t.Errorf("the pinned session's reads and writes read the clock %d times, want none", reads)
	}
	s.Unpin("a")
	if reads != 1 {
		t.Errorf("Unpin read the clock %d times, want once", reads)
	}

	// a was used at its unpin, 51 s in, after b; 30 s later neither is idle past the
	// TTL, and a third session evicts the least recently used: b, not a.
	c.advance(30 * time.Second)
	mustApply(t, s, key("r", "c"), engine.ActionIncrementCounter)
	if got, _ := s.Get(key("r", "a")); got.Fire != 2 {
		t.Errorf("a after its evaluation: fire_count %d, want 2 (it was evicted or expired)", got.Fire)
	}
	if got, _ := s.Get(key("r", "b")); got.Fire != 0 {
		t.Errorf("b, the least recently used: fire_count %d, want it evicted", got.Fire)
	}

	// A session pinned and unpinned without being read is not marked used.
	s.Pin("c")
	c.advance(time.Hour)
	s.Unpin("c")
	if got, _ := s.Get(key("r", "c")); got.Fire != 0 {
		t.Errorf("c, pinned but not used, idle for an hour: fire_count %d, want it expired", got.Fire)
	}
}

// checkTable fails t unless the store's bookkeeping agrees with the sessions it holds:
// total counts their counters and bytes what they are charged, the recency list links
// exactly them, each window's list is at most twice its length (or 4 places), and the
// session looked up last (lookup's shortcut) is one of them.
func checkTable(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	counted, listed, bytes := 0, 0, 0
	for st := s.root.next; st != &s.root; st = st.next {
		if s.byID[st.id] != st {
			t.Errorf("session %q is in the recency list, not in the table", st.id)
		}
		counted += st.counters.len()
		listed++
		own := sessionBytes + TextBytes(st.id) + stepBytes*st.windowRoom
		for _, c := range st.counters.list {
			own += counterBytes + TextBytes(c.key.scope)
		}
		for _, step := range st.window {
			own += TextBytes(step)
		}
		if own != st.bytes {
			t.Errorf("session %q takes %d bytes, its bytes say %d", st.id, own, st.bytes)
		}
		if st.windowRoom < cap(st.window) || st.windowRoom > max(2*len(st.window), 4) {
			t.Errorf("session %q: a window of %d steps, in a list of %d places (%d charged)", st.id, len(st.window), cap(st.window), st.windowRoom)
		}
		bytes += own
	}
	if listed != len(s.byID) || counted != s.total || bytes != s.bytes {
		t.Errorf("%d sessions listed, %d held; %d counters, total says %d; %d bytes, bytes says %d", listed, len(s.byID), counted, s.total, bytes, s.bytes)
	}
	if s.last != nil && s.byID[s.last.id] != s.last {
		t.Errorf("the session looked up last, %q, is no longer held", s.last.id)
	}
}

// TestForgottenSessionIsNotReadAgain: once a session is forgotten (evicted, expired at
// a lookup, a sweep or a Pin), its next read finds no counter and its next write begins
// it again, even when it was the session looked up last, which lookup answers without
// the table.
func TestForgottenSessionIsNotReadAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		forget func(s *Store, c *clock)
	}{
		{"evicted by new sessions", func(s *Store, _ *clock) {
			s.Append("b", "read", 4)
			s.Append("c", "read", 4)
		}},
		{"evicted for another session's counter", func(s *Store, _ *clock) {
			mustApply(t, s, key("r", "b"), engine.ActionIncrementCounter)
		}},
		{"expired at its lookup", func(_ *Store, c *clock) {
			c.advance(2 * time.Minute)
		}},
		{"expired by a sweep", func(s *Store, c *clock) {
			c.advance(2 * time.Minute)
			s.Sweep()
		}},
		{"expired at its Pin", func(s *Store, c *clock) {
			c.advance(2 * time.Minute)
			if s.Pin("a") {
				t.Error("a session idle past the TTL is held")
			}
			s.Unpin("a")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			s := New(Options{MaxSessions: 2, MaxTotalCounters: 2, IdleTTL: time.Minute, Now: c.now})
			mustApply(t, s, key("r", "a"), engine.ActionIncrementCounter)
			mustApply(t, s, key("q", "a"), engine.ActionIncrementCounter)
			if got, _ := s.Get(key("r", "a")); got.Fire != 1 {
				t.Fatalf("a: fire_count %d, want 1", got.Fire)
			}
			tc.forget(s, c)
			if got, _ := s.Get(key("r", "a")); got.Fire != 0 {
				t.Errorf("a, forgotten: fire_count %d, want 0", got.Fire)
			}
			if got := mustApply(t, s, key("q", "a"), engine.ActionIncrementCounter); got.Fire != 1 {
				t.Errorf("a's first write since it was forgotten: fire_count %d, want 1", got.Fire)
			}
			checkTable(t, s)
		})
	}
}

// TestConcurrentEvaluations runs evaluations as the engine makes them, each reading and
// writing its pinned session's counters, from several goroutines, each with sessions
// of its own as the sidecar orders one session's calls, over more sessions than the
// store holds and with the counters bound tight, so sessions are evicted between each
// other's evaluations (run with -race). An evaluation reads back what it wrote,
// whichever session another goroutine looked up meanwhile, and the store's bookkeeping
// ends consistent.
func TestConcurrentEvaluations(t *testing.T) {
	s := New(Options{MaxSessions: 6, MaxTotalCounters: 20})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				id := fmt.Sprintf("g%d-s%d", g, i%4)
				scoped := engine.CounterKey{Rule: "acme.p/R", Session: id, Scope: fmt.Sprint(i % 3), Scoped: true}
				s.Pin(id)
				before, _ := s.Get(key("acme.p/Q", id))
				_, _ = s.Get(scoped)
				after, err := s.Apply(key("acme.p/Q", id), engine.ActionIncrementCounter)
				_, _ = s.Apply(scoped, engine.ActionIncrementCounter)
				again, _ := s.Get(key("acme.p/Q", id))
				s.Unpin(id)
				if err != nil || after.Fire != before.Fire+1 || again != after {
					t.Errorf("%s: fire_count %d, then %d, read back %d (%v)", id, before.Fire, after.Fire, again.Fire, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkTable(t, s)
}
