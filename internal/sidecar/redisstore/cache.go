package redisstore

import (
	"sync"

	"github.com/oar-operator/oar-operator/internal/engine"
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
// The text it holds — counter keys and activity steps, which occurrences supply and can
// make as long as a request — is bounded as well, by maxText bytes: more makes room the
// same way, and a state longer than that alone is not kept.
type sessionCache struct {
	mu           sync.Mutex
	max, maxText int
	entries      map[string]*state
	text         int // the bytes of text of the states in entries
}

// maxCacheText is the most bytes of counter keys and activity steps a replica's
// cache keeps.
const maxCacheText = 32 << 20

// newSessionCache returns a cache of at most max sessions, or nil (no cache) when max
// is zero or less. A nil cache holds nothing.
func newSessionCache(max int) *sessionCache {
	if max <= 0 {
		return nil
	}
	return &sessionCache{max: max, maxText: maxCacheText, entries: make(map[string]*state)}
}

func (c *sessionCache) get(session string) *state {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[session]
}

func (c *sessionCache) put(session string, st *state) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(session)
	size := st.text()
	if size > c.maxText {
		return
	}
	for victim := range c.entries {
		if len(c.entries) < c.max && c.text+size <= c.maxText {
			break
		}
		c.remove(victim)
	}
	c.entries[session] = st
	c.text += size
}

// remove forgets session's state, if held.
func (c *sessionCache) remove(session string) {
	if old, held := c.entries[session]; held {
		c.text -= old.text()
		delete(c.entries, session)
	}
}

// text is the bytes of st's counter keys and activity steps.
func (st *state) text() int {
	n := 0
	for k := range st.counters {
		n += len(k)
	}
	for _, step := range st.window {
		n += len(step)
	}
	return n
}

func (c *sessionCache) drop(session string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(session)
}
