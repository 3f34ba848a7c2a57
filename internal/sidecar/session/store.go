// Package session keeps the engine sidecar's per-session state in memory, bounded: the
// counters of every (rule, session, scope) ([OAR-FIRE-3],
// [OAR-FIRE-5], [OAR-FIRE-10]) and each session's recent activity window
// ([OAR-PROF-9]). Store implements engine.CounterStore and engine.ActivityStore over one
// table of sessions, so a session's counters and window live and die together.
//
// The state lives outside any bundle: a reload swaps the program, never the store, so
// sessions keep their counters and window across reloads. Memory is bounded five ways:
// at most MaxSessions sessions (the least recently used is evicted first), a session
// idle for IdleTTL is forgotten, a session holds at most MaxCounters counters, all
// sessions together hold at most MaxTotalCounters (the least recently used sessions are
// evicted to make room; scoped counters, one per distinct scope value, are what can
// otherwise outgrow a container's memory long before MaxSessions is reached), and the
// memory they take at most MaxBytes, likewise: every session, counter and place in a window
// counted at what it costs the heap, with the text occurrences supply and can make as
// long as a request (session ids, counter scope values, activity steps). A counter that
// cannot be added within the per-session bound, or within a total one with no other
// session it may evict, cannot be applied, which the engine routes to the rule's
// on_error ([OAR-FIRE-9]) instead of silently dropping a counter.
//
// A session being evaluated is pinned (Pin, Unpin): no bound evicts it and it does
// not expire, so the evaluation reads and writes one state from its first read to its
// last write, the one Pin found held or the one it begins. Unpinned, another session's
// call could evict it, or its idle time run out, between two of its reads, and the
// evaluation would decide on part of the old state and part of a new one, which the
// decision log's session_began could not describe.
//
// One mutex guards the table; every operation is a map lookup (none for the session
// looked up last, the one being evaluated) and a list move, tens of nanoseconds, well
// below what an evaluation costs.
package session

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// Defaults: MaxSessions and MaxCounters replace zero fields of Options; DefaultIdleTTL
// is what the sidecar's flag defaults to. DefaultMaxBytes is what the injector gives a
// sidecar at its default memory limit: a quarter of 128 MiB.
const (
	DefaultMaxSessions      = 100_000
	DefaultIdleTTL          = 30 * time.Minute
	DefaultMaxCounters      = 4096
	DefaultMaxTotalCounters = 100_000
	DefaultMaxBytes         = 32 << 20
)

// What the store's bookkeeping charges, in bytes of heap, beside the text occurrences
// supply. TestBytesCoverTheHeap fills stores to their bound in the shapes that cost the
// heap the most per byte charged: fragmentation included, the heap grows by up to about
// 1.3 times what they are charged.
const (
	// sessionBytes is a session's state and its entry in the table.
	sessionBytes = 256
	// counterBytes is a counter in its session's list (which grows as append grows
	// it, so up to twice its 64 bytes) and its index slots.
	counterBytes = 160
	// stepBytes is a place in a window's list, charged for every place the list
	// has room for.
	stepBytes = 16
)

// TextBytes is what a string occurrences supplied is charged against a bound in bytes
// of heap: its bytes rounded up to 16, the block the allocator packs short strings in
// (one live string keeps its block) and the step of most of its small size classes.
func TextBytes(s string) int {
	return (len(s) + 15) &^ 15
}

// ErrCounterLimit is matched (errors.Is) by the error of an Apply that would give a
// session more than MaxCounters counters, or the store more than MaxTotalCounters with
// no other session it may evict (none is left, or every other one is pinned).
var ErrCounterLimit = errors.New("session counter limit reached")

// Options bound a Store.
type Options struct {
	// MaxSessions is the most sessions held; the least recently used goes first. A
	// session is created even when every session held is pinned, so the table exceeds
	// the bound by at most the sessions pinned at that moment, and the next creation
	// after they are unpinned evicts the table back within the bound.
	MaxSessions int
	// IdleTTL forgets a session not used for this long, once it is not pinned; zero
	// or negative keeps sessions until the LRU bound evicts them.
	IdleTTL time.Duration
	// MaxCounters is the most counters one session holds.
	MaxCounters int
	// MaxTotalCounters is the most counters all sessions hold together.
	MaxTotalCounters int
	// MaxBytes bounds the heap all sessions take together: their states, counters
	// and windows, and the text occurrences supplied (session ids, counter scope
	// values, activity steps), which can be as long as a request. What they are
	// charged stays within it; the heap they take, fragmentation included, within
	// about 1.3 times it. A session is kept past it when no other session is left to
	// evict, as are its window's steps, since neither can be refused; a counter is
	// refused (ErrCounterLimit).
	MaxBytes int
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
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// state is one session, linked into the recency list (most recent after the root).
type state struct {
	id   string
	used time.Time
	// pins counts the session's Pins not yet unpinned.
	pins int
	// usedWhilePinned reports that the session was read or written since it was
	// pinned: its last Unpin marks it used then (lookup).
	usedWhilePinned bool
	counters        counters
	window          []string
	// windowRoom is the number of places of the list window was made in, which may
	// reach before window's start (steps dropped) and past its end (room to append).
	windowRoom int
	// bytes is what the session is charged: sessionBytes, its id, its counters and
	// their scope values, its window's places and steps.
	bytes      int
	prev, next *state
}

// Store is the sidecar's session table. It is safe for concurrent use.
type Store struct {
	opt  Options
	mu   sync.Mutex
	byID map[string]*state
	root state // sentinel: root.next is the most recently used, root.prev the least
	// last is the session lookup last found or created, or nil. The reads and writes of
	// one evaluation all name its session, with one string, so comparing the id with
	// last's (equal pointers: no byte is read) spares hashing it into byID at each of
	// them. remove clears it: it is never a session byID no longer holds.
	last *state
	// total is the number of counters of all sessions, and bytes what they are
	// charged together.
	total, bytes int
	// evictedLRU and evictedTTL count sessions forgotten for each reason.
	evictedLRU, evictedTTL uint64
	// pinsBeforeState counts the Pins of sessions that held no state when pinned; the
	// count moves to the session's state when it is created, so a session created
	// while pinned is pinned from its creation. A session with state keeps its count
	// there, where Pin, Unpin and the bounds find it without another map lookup.
	pinsBeforeState map[string]int
}

var (
	_ engine.CounterStore  = (*Store)(nil)
	_ engine.ActivityStore = (*Store)(nil)
)

// New returns an empty store.
func New(opt Options) *Store {
	s := &Store{opt: opt.withDefaults(), byID: map[string]*state{}, pinsBeforeState: map[string]int{}}
	s.root.next, s.root.prev = &s.root, &s.root
	return s
}

// Get implements engine.CounterStore. Reading a session's counters does not create it.
// An evaluation makes a Get for each counter it reads, so Get unlocks without defer,
// which cost about 2 ns of its 30, and hashes the key only when the session holds a
// counter it could match.
func (s *Store) Get(k engine.CounterKey) (engine.Counts, error) {
	var c engine.Counts
	s.mu.Lock()
	if st := s.lookup(k.Session); st != nil && st.counters.len() > 0 {
		var key counterKey
		key.set(&k)
		if i, ok := st.counters.find(&key); ok {
			c = st.counters.list[i].counts
		}
	}
	s.mu.Unlock()
	return c, nil
}

// Apply implements engine.CounterStore.
func (s *Store) Apply(k engine.CounterKey, a engine.Action) (engine.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.lookupOrCreate(k.Session)
	var key counterKey
	key.set(&k)
	i, exists := st.counters.find(&key)
	if !exists {
		if st.counters.len() >= s.opt.MaxCounters {
			return engine.Counts{}, fmt.Errorf("session %q already holds %d counters, cannot add %s: %w", k.Session, st.counters.len(), diag.Truncate(k.ReportKey()), ErrCounterLimit)
		}
		for s.total >= s.opt.MaxTotalCounters {
			if !s.evictOther(st) {
				return engine.Counts{}, fmt.Errorf("the sessions hold %d counters, the most --max-counters allows, and no session other than %q can be evicted (none is left, or every other is being evaluated): cannot add %s: %w",
					s.total, k.Session, diag.Truncate(k.ReportKey()), ErrCounterLimit)
			}
		}
		need := counterBytes + TextBytes(k.Scope)
		for s.bytes+need > s.opt.MaxBytes {
			if !s.evictOther(st) {
				return engine.Counts{}, fmt.Errorf("the sessions take %d bytes, and a counter of %d would pass the most --max-session-bytes allows, with no session other than %q to evict (none is left, or every other is being evaluated): cannot add %s: %w",
					s.bytes, need, k.Session, diag.Truncate(k.ReportKey()), ErrCounterLimit)
			}
		}
		i = st.counters.add(&key)
		s.total++
		s.charge(st, need)
	}
	c := &st.counters.list[i].counts
	*c = c.After(a)
	return *c, nil
}

// Restore implements engine.CounterStore. A counter set back to zero is removed, as
// if never added: it reads the same and no longer counts against the bounds.
func (s *Store) Restore(k engine.CounterKey, c engine.Counts) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		i      int
		exists bool
	)
	st := s.lookup(k.Session)
	if st != nil {
		var key counterKey
		key.set(&k)
		i, exists = st.counters.find(&key)
	}
	switch {
	case !exists && c == engine.Counts{}:
	case !exists:
		return fmt.Errorf("session %q no longer holds counter %s", k.Session, diag.Truncate(k.ReportKey()))
	case c == engine.Counts{}:
		s.charge(st, -counterBytes-TextBytes(st.counters.list[i].key.scope))
		st.counters.remove(i)
		s.total--
	default:
		st.counters.list[i].counts = c
	}
	return nil
}

// Pin keeps the session from being forgotten until the matching Unpin: neither the
// bounds evict it nor does idleness expire it, whether it is held now or created while
// pinned. It reports whether the store held state of the session: not before its first
// change, nor once it was forgotten (evicted, or idle past IdleTTL: an idle session
// not pinned already is forgotten here, so the evaluation begins it again, as Pin
// reports, instead of reading the state Pin reported gone). Pinning does not count as
// using the session: its recency and idle time stay as they were; reading or writing it
// while it is pinned does, once, when it is last unpinned (lookup). Pins nest: a
// session pinned twice is kept until unpinned twice.
func (s *Store) Pin(session string) (held bool) {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.byID[session]
	if st != nil && st.pins == 0 && s.idle(st, now) {
		s.remove(st)
		s.evictedTTL++
		st = nil
	}
	if st == nil {
		s.pinsBeforeState[session]++
		return false
	}
	st.pins++
	return true
}

// Unpin ends one Pin of the session, and the last one marks it used now when it was
// read or written while pinned. A session left over a bound while pinned is forgotten
// as any other: expired once idle, evicted when a bound next needs room.
func (s *Store) Unpin(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A pinned session's state is never removed, so its pins are where Pin put them,
	// or on the state created since.
	if st := s.byID[session]; st != nil && st.pins > 0 {
		st.pins--
		if st.pins == 0 && st.usedWhilePinned {
			st.usedWhilePinned = false
			st.used = s.opt.Now()
			s.moveToFront(st)
		}
	} else if n := s.pinsBeforeState[session]; n > 1 {
		s.pinsBeforeState[session] = n - 1
	} else {
		delete(s.pinsBeforeState, session)
	}
}

// Window implements engine.ActivityStore. The slice is never modified afterwards:
// Append replaces it.
func (s *Store) Window(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.lookup(session); st != nil {
		return st.window
	}
	return nil
}

// Append implements engine.ActivityStore, keeping the newest keep steps. A window
// handed out earlier never changes: the step goes past the end of every window handed
// out so far, into spare room, and the oldest step is dropped by moving the start
// forward. The window is copied only when its list is full, into one twice its length
// (at least 4 places, at most twice keep): the copies cost each step a constant amount,
// and the list takes at most twice the places the window holds, not the capability's
// activity_window (up to 2^20) for a session that made one call.
func (s *Store) Append(session, step string, keep int) {
	if keep <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.lookupOrCreate(session)
	old := st.window
	if len(old) >= keep {
		for _, dropped := range old[:len(old)-keep+1] {
			s.charge(st, -TextBytes(dropped))
		}
		old = old[len(old)-keep+1:]
	}
	// A list made for a wider window (the bundle's activity_window shrank) is given
	// back too.
	if len(old) == cap(old) || st.windowRoom > 2*keep {
		w := make([]string, len(old), min(max(2*len(old), 4), 2*keep))
		copy(w, old)
		s.charge(st, stepBytes*(cap(w)-st.windowRoom))
		st.windowRoom = cap(w)
		old = w
	}
	st.window = append(old, step)
	s.charge(st, TextBytes(step))
	for s.bytes > s.opt.MaxBytes && s.evictOther(st) {
	}
}

// charge adds n bytes (negative: gives them back) to what st and the store take.
func (s *Store) charge(st *state, n int) {
	st.bytes += n
	s.bytes += n
}

// evictOther forgets the least recently used session that is neither pinned nor keep,
// to make room under a bound, and reports whether there was one.
func (s *Store) evictOther(keep *state) bool {
	victim := s.evictable(keep)
	if victim == nil {
		return false
	}
	s.remove(victim)
	s.evictedLRU++
	return true
}

// Len returns the number of sessions held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// Bytes returns what the sessions held are charged against MaxBytes.
func (s *Store) Bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Evictions returns how many sessions were forgotten because a bound needed room (lru)
// and because they were idle (ttl).
func (s *Store) Evictions() (lru, ttl uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evictedLRU, s.evictedTTL
}

// Sweep forgets every session idle for longer than IdleTTL, except pinned ones;
// lookups forget them too, so Sweep only returns their memory sooner.
func (s *Store) Sweep() {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
}

// lookup returns the session, marking it used, or nil when it is absent or expired. A
// pinned session does not expire, and is marked used when it is last unpinned (Unpin)
// rather than at each of its evaluation's reads and writes: the evaluation reads the
// clock once instead of at each of them, where a read of it (about 40 ns on a VM) cost
// about as much as the operation.
func (s *Store) lookup(id string) *state {
	st := s.last
	if st == nil || st.id != id {
		if st = s.byID[id]; st == nil {
			return nil
		}
		s.last = st
	}
	if st.pins > 0 {
		st.usedWhilePinned = true
		return st
	}
	now := s.opt.Now()
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
// require, short of a pinned session) when it is absent.
func (s *Store) lookupOrCreate(id string) *state {
	if st := s.lookup(id); st != nil {
		return st
	}
	now := s.opt.Now()
	s.expire(now)
	for len(s.byID) >= s.opt.MaxSessions {
		victim := s.evictable(nil)
		if victim == nil {
			break
		}
		s.remove(victim)
		s.evictedLRU++
	}
	st := &state{id: id, used: now}
	if n, ok := s.pinsBeforeState[id]; ok {
		st.pins = n
		delete(s.pinsBeforeState, id)
	}
	s.byID[id] = st
	s.last = st
	s.insertFront(st)
	s.charge(st, sessionBytes+TextBytes(id))
	for s.bytes > s.opt.MaxBytes && s.evictOther(st) {
	}
	return st
}

func (s *Store) idle(st *state, now time.Time) bool {
	return s.opt.IdleTTL > 0 && now.Sub(st.used) > s.opt.IdleTTL
}

// evictable returns the least recently used session that is neither pinned nor keep,
// or nil when there is none. Only pinned sessions are passed over, and a session is
// pinned while it is evaluated, so the walk is short.
func (s *Store) evictable(keep *state) *state {
	for st := s.root.prev; st != &s.root; st = st.prev {
		if st != keep && st.pins == 0 {
			return st
		}
	}
	return nil
}

// expire removes idle sessions from the least recently used end, passing over pinned
// ones. The list is in order of use, so the walk stops at the first session in use.
func (s *Store) expire(now time.Time) {
	for st := s.root.prev; st != &s.root && s.idle(st, now); {
		prev := st.prev
		if st.pins == 0 {
			s.remove(st)
			s.evictedTTL++
		}
		st = prev
	}
}

func (s *Store) remove(st *state) {
	s.total -= st.counters.len()
	s.bytes -= st.bytes
	st.prev.next, st.next.prev = st.next, st.prev
	st.prev, st.next = nil, nil
	delete(s.byID, st.id)
	if s.last == st {
		s.last = nil
	}
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
