package session

import (
	"cmp"
	"hash/maphash"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// counterKey is engine.CounterKey within one session, with a hash of it that orders
// the session's counters first: the qualified rule ids of a pack share long prefixes,
// and a binary search comparing them byte by byte cost more than the rest of a read.
type counterKey struct {
	hash        uint64
	rule, scope string
	scoped      bool
}

// hashSeed seeds the keys' hashes. The order they give lasts as long as the process,
// as the counters do.
var hashSeed = maphash.MakeSeed()

// set makes key k's. It fills the key in place, member by member: returned, or
// assigned whole, the key was assembled in a temporary with eight-byte stores and
// copied out sixteen bytes at a time, and each such load waited for the stores it
// spans, which cost more than the search.
func (key *counterKey) set(k *engine.CounterKey) {
	h := maphash.String(hashSeed, k.Rule)
	if k.Scoped {
		// Mixed in so that the same rule's scopes, and a scope from no scope, hash apart.
		h = (h^maphash.String(hashSeed, k.Scope))*0x9e3779b97f4a7c15 + 1
	}
	key.hash, key.rule, key.scope, key.scoped = h, k.Rule, k.Scope, k.Scoped
}

// compare orders keys by hash, then by their members, which tell apart the keys whose
// hashes collide.
func (k *counterKey) compare(o *counterKey) int {
	if k.hash != o.hash {
		return cmp.Compare(k.hash, o.hash)
	}
	if c := strings.Compare(k.rule, o.rule); c != 0 {
		return c
	}
	if k.scoped != o.scoped {
		if k.scoped {
			return 1
		}
		return -1
	}
	return strings.Compare(k.scope, o.scope)
}

// counter is one counter of a session.
type counter struct {
	key    counterKey
	counts engine.Counts
}

// counters are one session's counters, sorted by key (compare). A session holds few
// counters, and at that size a sorted slice takes about half the memory of a map, which
// matters when the table holds a hundred thousand sessions; the hash adds 8 bytes to a
// counter's 56. The slice grows as append grows it (slices.Insert), doubling while it is
// small: growing it by a quarter to spare memory, as it once did, allocated a third more
// per evaluation on a workload whose sessions begin and gather counters, and the
// counters of all sessions are bounded (MaxTotalCounters).
type counters []counter

// find returns the position of k, or where it belongs, and whether it is there. It
// searches in place: a search through slices.BinarySearchFunc copied each counter it
// compared.
func (cs counters) find(k *counterKey) (int, bool) {
	lo, hi := 0, len(cs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c := &cs[m].key; c.hash < k.hash || c.hash == k.hash && c.compare(k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(cs) && cs[lo].key.equal(k)
}

// equal reports whether k and o are the same key, for about 2 ns less a read than
// compare: it need not order the strings, only match them, and the rule ids it matches
// are most often one string, whose bytes it then does not read.
func (k *counterKey) equal(o *counterKey) bool {
	return k.hash == o.hash && k.scoped == o.scoped && k.rule == o.rule && k.scope == o.scope
}
