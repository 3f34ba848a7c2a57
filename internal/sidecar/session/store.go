// Package session keeps the engine sidecar's per-session state (DESIGN.md "The engine
// sidecar", "Scale"): the counters of every (rule, session, scope) ([OAR-FIRE-3],
// [OAR-FIRE-5], [OAR-FIRE-10]) and each session's recent activity window
// ([OAR-PROF-9]). Store implements engine.CounterStore and engine.ActivityStore over one
// table of sessions, so a session's counters and window live and die together.
//
// The state lives outside any bundle: a reload swaps the program, never the store, so
// sessions keep their counters and window across reloads. Memory is bounded four ways:
// at most MaxSessions sessions (the least recently used is evicted first), a session
// idle for IdleTTL is forgotten, a session holds at most MaxCounters counters, and all
// sessions together hold at most MaxTotalCounters (the least recently used sessions are
// evicted to make room; scoped counters, one per distinct scope value, are what can
// otherwise outgrow a container's memory long before MaxSessions is reached). A counter
// that cannot be added within the per-session bound, or within the total one with no
// other session left to evict, cannot be applied, which the engine routes to the rule's
// on_error ([OAR-FIRE-9]) instead of silently dropping a counter.
//
// One mutex guards the table; every operation is a map lookup and a list move, a few
// hundred nanoseconds, well below what an evaluation costs.
package session

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// Defaults: MaxSessions and MaxCounters replace zero fields of Options; DefaultIdleTTL
// is what the sidecar's flag defaults to.
const (
	DefaultMaxSessions      = 100_000
	DefaultIdleTTL          = 30 * time.Minute
	DefaultMaxCounters      = 4096
	DefaultMaxTotalCounters = 100_000
)

// ErrCounterLimit is matched (errors.Is) by the error of an Apply that would give a
// session more than MaxCounters counters, or the store more than MaxTotalCounters with
// no other session to evict.
var ErrCounterLimit = errors.New("session counter limit reached")

// Options bound a Store.
type Options struct {
	// MaxSessions is the most sessions held; the least recently used goes first.
	MaxSessions int
	// IdleTTL forgets a session not used for this long; zero or negative keeps
	// sessions until the LRU bound evicts them.
	IdleTTL time.Duration
	// MaxCounters is the most counters one session holds.
	MaxCounters int
	// MaxTotalCounters is the most counters all sessions hold together.
	MaxTotalCounters int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxCounters <= 0 {
		o.MaxCounters = DefaultMaxCounters
	}
	if o.MaxTotalCounters <= 0 {
		o.MaxTotalCounters = DefaultMaxTotalCounters
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// state is one session, linked into the recency list (most recent after the root).
type state struct {
	id         string
	used       time.Time
	counters   counters
	window     []string
	prev, next *state
}

// Store is the sidecar's session table. It is safe for concurrent use.
type Store struct {
	opt  Options
	mu   sync.Mutex
	byID map[string]*state
	root state // sentinel: root.next is the most recently used, root.prev the least
	// total is the number of counters of all sessions.
	total int
	// evictedLRU and evictedTTL count sessions forgotten for each reason.
	evictedLRU, evictedTTL uint64
}

var (
	_ engine.CounterStore  = (*Store)(nil)
	_ engine.ActivityStore = (*Store)(nil)
)

// New returns an empty store.
func New(opt Options) *Store {
	s := &Store{opt: opt.withDefaults(), byID: map[string]*state{}}
	s.root.next, s.root.prev = &s.root, &s.root
	return s
}

// Get implements engine.CounterStore. Reading a session's counters does not create it.
func (s *Store) Get(k engine.CounterKey) (engine.Counts, error) {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.lookup(k.Session, now)
	if st == nil {
		return engine.Counts{}, nil
	}
	if i, ok := st.counters.find(counterKey{k.Rule, k.Scope, k.Scoped}); ok {
		return st.counters[i].counts, nil
	}
	return engine.Counts{}, nil
}

// Apply implements engine.CounterStore.
func (s *Store) Apply(k engine.CounterKey, a engine.Action) (engine.Counts, error) {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.lookupOrCreate(k.Session, now)
	key := counterKey{k.Rule, k.Scope, k.Scoped}
	i, exists := st.counters.find(key)
	if !exists {
		if len(st.counters) >= s.opt.MaxCounters {
			return engine.Counts{}, fmt.Errorf("session %q already holds %d counters, cannot add %s: %w", k.Session, len(st.counters), k.ReportKey(), ErrCounterLimit)
		}
		// st was just moved to the front, so the back is st only when st is alone.
		for s.total >= s.opt.MaxTotalCounters && s.root.prev != st {
			s.remove(s.root.prev)
			s.evictedLRU++
		}
		if s.total >= s.opt.MaxTotalCounters {
			return engine.Counts{}, fmt.Errorf("the sessions hold %d counters, the most --max-counters allows, and session %q is the only one left: cannot add %s: %w",
				s.total, k.Session, k.ReportKey(), ErrCounterLimit)
		}
		st.counters = st.counters.insert(i, counter{key: key})
		s.total++
	}
	c := &st.counters[i].counts
	*c = c.After(a)
	return *c, nil
}

// Holds reports whether the store holds state of the session: not before its first
// change, nor once it is forgotten (idle past IdleTTL, or evicted). Asking changes
// nothing, not even the session's recency.
func (s *Store) Holds(session string) bool {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.byID[session]
	return st != nil && !s.idle(st, now)
}

// Window implements engine.ActivityStore. The slice is never modified afterwards:
// Append replaces it.
func (s *Store) Window(session string) []string {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.lookup(session, now); st != nil {
		return st.window
	}
	return nil
}

// Append implements engine.ActivityStore, keeping the newest max steps. A window
// handed out earlier never changes: the step goes past the end of every window handed
// out so far, into spare capacity, and the oldest step is dropped by moving the start
// forward; the window is copied, into room for max more steps, only when the capacity
// runs out, so a session's appends allocate about once per max steps.
func (s *Store) Append(session, step string, max int) {
	if max <= 0 {
		return
	}
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.lookupOrCreate(session, now)
	old := st.window
	if len(old) >= max {
		old = old[len(old)-max+1:]
	}
	if len(old) == cap(old) {
		w := make([]string, len(old), len(old)+max)
		copy(w, old)
		old = w
	}
	st.window = append(old, step)
}

// Len returns the number of sessions held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// Evictions returns how many sessions were forgotten because the table was full (lru)
// and because they were idle (ttl).
func (s *Store) Evictions() (lru, ttl uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evictedLRU, s.evictedTTL
}

// Sweep forgets every session idle for longer than IdleTTL; lookups forget them too,
// so Sweep only returns their memory sooner.
func (s *Store) Sweep() {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
}

// lookup returns the session, marking it used, or nil when it is absent or expired.
func (s *Store) lookup(id string, now time.Time) *state {
	st := s.byID[id]
	if st == nil {
		return nil
	}
	if s.idle(st, now) {
		s.remove(st)
		s.evictedTTL++
		return nil
	}
	st.used = now
	s.moveToFront(st)
	return st
}

// lookupOrCreate returns the session, creating it (and evicting what the bounds
// require) when it is absent.
func (s *Store) lookupOrCreate(id string, now time.Time) *state {
	if st := s.lookup(id, now); st != nil {
		return st
	}
	s.expire(now)
	for len(s.byID) >= s.opt.MaxSessions {
		s.remove(s.root.prev)
		s.evictedLRU++
	}
	st := &state{id: id, used: now}
	s.byID[id] = st
	s.insertFront(st)
	return st
}

func (s *Store) idle(st *state, now time.Time) bool {
	return s.opt.IdleTTL > 0 && now.Sub(st.used) > s.opt.IdleTTL
}

// expire removes idle sessions from the least recently used end.
func (s *Store) expire(now time.Time) {
	for last := s.root.prev; last != &s.root && s.idle(last, now); last = s.root.prev {
		s.remove(last)
		s.evictedTTL++
	}
}

func (s *Store) remove(st *state) {
	s.total -= len(st.counters)
	st.prev.next, st.next.prev = st.next, st.prev
	st.prev, st.next = nil, nil
	delete(s.byID, st.id)
}

func (s *Store) insertFront(st *state) {
	st.prev, st.next = &s.root, s.root.next
	s.root.next.prev = st
	s.root.next = st
}

func (s *Store) moveToFront(st *state) {
	if s.root.next == st {
		return
	}
	st.prev.next, st.next.prev = st.next, st.prev
	s.insertFront(st)
}
