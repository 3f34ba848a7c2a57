package redisstore

import (
	"sync"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

// DefaultCacheSessions is how many sessions' last known state a replica keeps when
// --session-store-cache is not given.
const DefaultCacheSessions = 10000

// state is one session's state at one version: what a Load read, a Commit wrote, or a
// refused commit returned. It is never changed once made, so snapshots share it.
type state struct {
	version  string
	counters map[string]engine.Counts
	window   []string
}

// sessionCache holds the state this replica last saw of each recent session. A Load it
// answers costs no round trip; nothing trusts it unchecked, since every Commit of a
// snapshot read from it proves the version is still current (the commit script, or a
// version check when the occurrence changed nothing) and a stale entry is replaced by
// the state the refusal returns. A session that stays on one replica — the usual case —
// then costs one round trip an occurrence instead of two. When full, an arbitrary entry
// makes room: an evicted session costs one read, never a wrong decision.
//
// The heap it takes is bounded as well, by maxBytes: each state is charged what it
// costs, with the text occurrences supply and can make as long as a request (session
// ids, counter keys, activity steps), and more makes room the same way; a state that
// takes more than that alone is not kept.
type sessionCache struct {
	mu            sync.Mutex
	max, maxBytes int
	entries       map[string]cached
	bytes         int // what the states in entries are charged
}

// cached is a state the cache holds and what it was charged when put, so that taking it
// out goes through its counters no second time.
type cached struct {
	st    *state
	bytes int
}

// What a cached state is charged, in bytes of heap, beside the text of its session id,
// version, counter keys and steps (session.TextBytes); as session.Store charges, and
// checked the same way (TestCacheBytesCoverTheHeap).
const (
	// cachedStateBytes is a state, its counters' map (a map of up to eight counters
	// takes one group of eight places, about 310 bytes) and its entry in the cache.
	cachedStateBytes = 512
	// cachedCounterBytes is a counter's place in its state's map, which is at most
	// seven eighths full and grows by doubling: 32 bytes a place, up to 75 a counter.
	cachedCounterBytes = 80
	// cachedStepBytes is a place in a window's list.
	cachedStepBytes = 16
)

// newSessionCache returns a cache of at most max sessions taking at most maxBytes
// (session.DefaultMaxBytes when zero or less), or nil (no cache) when max is zero or
// less. A nil cache holds nothing.
func newSessionCache(max, maxBytes int) *sessionCache {
	if max <= 0 {
		return nil
	}
	if maxBytes <= 0 {
		maxBytes = session.DefaultMaxBytes
	}
	return &sessionCache{max: max, maxBytes: maxBytes, entries: make(map[string]cached)}
}

func (c *sessionCache) get(session string) *state {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[session].st
}

func (c *sessionCache) put(session string, st *state) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(session)
	size := st.bytes(session)
	if size > c.maxBytes {
		return
	}
	for victim := range c.entries {
		if len(c.entries) < c.max && c.bytes+size <= c.maxBytes {
			break
		}
		c.remove(victim)
	}
	c.entries[session] = cached{st, size}
	c.bytes += size
}

// remove forgets session's state, if held.
func (c *sessionCache) remove(session string) {
	if old, held := c.entries[session]; held {
		c.bytes -= old.bytes
		delete(c.entries, session)
	}
}

// bytes is what st, cached as session id's state, is charged.
func (st *state) bytes(id string) int {
	n := cachedStateBytes + session.TextBytes(id) + session.TextBytes(st.version) + cachedStepBytes*cap(st.window)
	for k := range st.counters {
		n += cachedCounterBytes + session.TextBytes(k)
	}
	for _, step := range st.window {
		n += session.TextBytes(step)
	}
	return n
}

// len is how many sessions the cache holds.
func (c *sessionCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// charged is what the states held are charged; zero for a nil cache.
func (c *sessionCache) charged() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *sessionCache) drop(session string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(session)
}
