package redisstore

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// roundTrips counts the store's calls by op, and what else it observes.
type roundTrips struct {
	ops                                  map[string]int
	failed, conflicts, waits, late, fast int
}

func (r *roundTrips) RoundTrip(op string, _ time.Duration, err error) {
	if err == nil {
		r.ops[op]++
	} else {
		r.failed++
	}
}

func (r *roundTrips) Conflict() { r.conflicts++ }

func (r *roundTrips) PendingWait() { r.waits++ }

func (r *roundTrips) CorrectionTooLate() { r.late++ }

func (r *roundTrips) FailedFast(string, error) { r.fast++ }

func cachedStore(t *testing.T, opt Options) (*Store, *roundTrips) {
	t.Helper()
	rt := &roundTrips{ops: map[string]int{}}
	opt.CacheSessions, opt.Observer = DefaultCacheSessions, rt
	return newStore(t, opt), rt
}

// increment is one occurrence that counts: it reads the counter and adds one.
func increment(t *testing.T, s *Store) (engine.Counts, bool) {
	t.Helper()
	snap := load(t, s, "s1")
	c, err := snap.Apply(plain, engine.ActionIncrementCounter)
	if err != nil {
		t.Fatal(err)
	}
	return c, commit(t, s, snap)
}

// TestCachedSessionCostsOneRoundTrip: once a replica has read a session, an occurrence
// that changes it costs its commit only, and one that changes nothing a version check.
func TestCachedSessionCostsOneRoundTrip(t *testing.T) {
	s, rt := cachedStore(t, Options{})
	for want := int64(1); want <= 3; want++ {
		if c, ok := increment(t, s); !ok || c.Fire != want {
			t.Fatalf("occurrence %d: %+v committed=%v", want, c, ok)
		}
	}
	if !commit(t, s, load(t, s, "s1")) {
		t.Fatal("an occurrence that changed nothing was refused")
	}
	if want := map[string]int{"load": 1, "commit": 3, "validate": 1}; !maps.Equal(rt.ops, want) || rt.conflicts != 0 {
		t.Errorf("round trips %v, %d conflicts; want %v and none", rt.ops, rt.conflicts, want)
	}
}

// TestStaleCacheIsNeverTrusted: a replica whose cached session another replica changed
// has its commit refused, and a read-only occurrence its version check; either refusal
// brings the session as it now is, so the next attempt needs no read and succeeds. A
// session that expired is as stale as one that changed.
func TestStaleCacheIsNeverTrusted(t *testing.T) {
	a, art := cachedStore(t, Options{IdleTTL: time.Hour})
	b, _ := cachedStore(t, Options{IdleTTL: time.Hour})
	increment(t, a)
	increment(t, b)
	if c, ok := increment(t, a); ok {
		t.Fatalf("a commit from a stale cache (count %d) was accepted", c.Fire)
	}
	if c, ok := increment(t, a); !ok || c.Fire != 3 {
		t.Fatalf("the attempt after the refusal: %+v committed=%v; want 3, committed", c, ok)
	}
	increment(t, b) // b's cache is stale: refused
	increment(t, b) // 4
	if commit(t, a, load(t, a, "s1")) {
		t.Fatal("a read-only occurrence on a stale cache was accepted")
	}
	if c, _ := load(t, a, "s1").Get(plain); c.Fire != 4 {
		t.Errorf("after the refused check the cache holds %+v, want 4", c)
	}
	if art.ops["load"] != 1 || art.conflicts != 2 {
		t.Errorf("replica a: %v round trips, %d conflicts; want one load and 2 conflicts", art.ops, art.conflicts)
	}

	if err := a.client.Del(context.Background(), a.key("s1")).Err(); err != nil {
		t.Fatal(err)
	}
	if commit(t, a, load(t, a, "s1")) {
		t.Fatal("a read-only occurrence on the cache of a session that expired was accepted")
	}
	if c, _ := load(t, a, "s1").Get(plain); c.Fire != 0 {
		t.Errorf("after the session expired the cache holds %+v", c)
	}
}

// TestCacheIsBounded: the cache never holds more sessions than CacheSessions, and none
// when it is zero.
func TestCacheIsBounded(t *testing.T) {
	for _, max := range []int{0, 2} {
		s := newStore(t, Options{CacheSessions: max})
		for _, session := range []string{"s1", "s2", "s3", "s4"} {
			load(t, s, session)
		}
		if n := s.cache.len(); n != max {
			t.Errorf("CacheSessions %d: the cache holds %d sessions", max, n)
		}
	}
}

// TestCacheBytesAreBounded: what the cached states take (charged as they cost the heap,
// with their counter keys and activity steps as long as occurrences make them) stays
// within maxBytes: a state that needs room makes it by forgetting others, and one
// taking more than maxBytes alone is not kept.
func TestCacheBytesAreBounded(t *testing.T) {
	long := func(n int) *state {
		return &state{counters: map[string]engine.Counts{strings.Repeat("k", n): {Fire: 1}}, window: []string{"read"}}
	}
	size, shorter := long(40).bytes("a"), long(10).bytes("c")
	if shorter >= size {
		t.Fatalf("a state with a 10-byte key charged %d, one with a 40-byte key %d", shorter, size)
	}
	// Room for two states of 40-byte keys, not three.
	c := newSessionCache(10, 2*size+size/2)
	c.put("a", long(40))
	c.put("b", long(40))
	if c.len() != 2 || c.bytes != 2*size {
		t.Fatalf("two states of %d bytes: %d held, %d bytes", size, c.len(), c.bytes)
	}
	c.put("c", long(40))
	if c.len() != 2 || c.bytes != 2*size || c.get("c") == nil {
		t.Errorf("a third state of %d bytes under a bound of %d: %d held, %d bytes, c held %v", size, c.maxBytes, c.len(), c.bytes, c.get("c") != nil)
	}
	c.put("c", long(10))
	if c.len() != 2 || c.bytes != size+shorter {
		t.Errorf("c replaced by a shorter state: %d held, %d bytes", c.len(), c.bytes)
	}
	c.put("d", long(3*size))
	if c.get("d") != nil || c.bytes > c.maxBytes {
		t.Errorf("a state of more than %d bytes was kept (%d bytes)", c.maxBytes, c.bytes)
	}
	c.drop("c")
	if c.get("c") != nil || c.bytes > size {
		t.Errorf("c dropped: %d bytes left", c.bytes)
	}
}
