package session

import (
	"hash/maphash"
	"math/bits"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// counterKey is engine.CounterKey within one session, with a hash of it by which the
// session's index finds it: the qualified rule ids of a pack share long prefixes, and
// telling keys apart by their hash first spares comparing those byte by byte.
type counterKey struct {
	hash        uint64
	rule, scope string
	scoped      bool
}

// hashSeed seeds the keys' hashes. The index they place keys in lasts as long as the
// process, as the counters do.
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

// equal reports whether k and o are the same key. Keys whose hashes differ are told
// apart without reading a string, and the rule ids it matches are most often one
// string, whose bytes it then does not read.
func (k *counterKey) equal(o *counterKey) bool {
	return k.hash == o.hash && k.scoped == o.scoped && k.rule == o.rule && k.scope == o.scope
}

// counter is one counter of a session.
type counter struct {
	key    counterKey
	counts engine.Counts
}

// counters are one session's counters, in the order they were added, and once there
// are more than scanned of them an index that finds one by its key's hash.
//
// The index is a table of positions in list, open-addressed with linear probing and at
// most half full: a read probes about one slot and compares one key. It replaced a list
// sorted by hash and searched by halves, which on the generated workload's tool calls
// (sessions of about 60 counters, six reads and writes per evaluation) read six
// counters a search, each most likely in a cache line of its own, and moved half the
// list at every counter added. The index costs 8 to 16 bytes a counter beside the
// counter's 64 (and its scope's text): with 64-character scopes, 157 bytes a counter
// in all where the sorted list took 141 to 149. A session with few counters has none.
type counters struct {
	list []counter
	// slots holds, for each key indexed, its position in list plus one; 0 is a free
	// slot. Its length is a power of two, and a key's probe starts at the slot its
	// hash's top bits name. It is nil while list holds scanned or fewer.
	slots []uint32
}

// scanned is the most counters a session holds without an index, finding one by
// comparing each hash in turn: most sessions hold few counters, and so keep no index's
// memory, and a few counters side by side are read in a short, predictable walk.
const scanned = 8

// len is the number of counters.
func (cs *counters) len() int { return len(cs.list) }

// find returns the position of k in list, and whether it is there.
func (cs *counters) find(k *counterKey) (int, bool) {
	if cs.slots == nil {
		for i := range cs.list {
			if cs.list[i].key.equal(k) {
				return i, true
			}
		}
		return 0, false
	}
	mask := len(cs.slots) - 1
	for j := cs.home(k.hash); ; j = (j + 1) & mask {
		p := cs.slots[j]
		if p == 0 {
			return 0, false
		}
		if cs.list[p-1].key.equal(k) {
			return int(p - 1), true
		}
	}
}

// add appends a zero counter of key k, which find did not find, and returns its
// position.
func (cs *counters) add(k *counterKey) int {
	cs.list = append(cs.list, counter{key: *k})
	i := len(cs.list) - 1
	switch {
	case len(cs.list) <= scanned:
	case 2*len(cs.list) > len(cs.slots):
		cs.reindex()
	default:
		cs.place(i)
	}
	return i
}

// remove deletes the counter at position i, moving the last counter into its place.
func (cs *counters) remove(i int) {
	last := len(cs.list) - 1
	if cs.slots != nil {
		cs.unplace(cs.slotOf(i))
		if i != last {
			cs.slots[cs.slotOf(last)] = uint32(i + 1)
		}
	}
	cs.list[i] = cs.list[last]
	cs.list[last] = counter{} // drop the strings it held
	cs.list = cs.list[:last]
	if len(cs.list) <= scanned {
		cs.slots = nil
	}
}

// reindex builds the index for the counters in list, at most half full.
func (cs *counters) reindex() {
	size := 1 << bits.Len(uint(2*len(cs.list)-1))
	cs.slots = make([]uint32, size)
	for i := range cs.list {
		cs.place(i)
	}
}

// home is the slot where the probe for a key with hash h starts: as many of its top
// bits as number the slots. (The shift is taken from the length rather than kept
// beside it: a session's state is then a size class smaller.)
func (cs *counters) home(h uint64) int {
	return int(h >> (64 - bits.TrailingZeros(uint(len(cs.slots)))))
}

// place indexes the counter at position i, in the first free slot from its home.
func (cs *counters) place(i int) {
	mask := len(cs.slots) - 1
	j := cs.home(cs.list[i].key.hash)
	for cs.slots[j] != 0 {
		j = (j + 1) & mask
	}
	cs.slots[j] = uint32(i + 1)
}

// slotOf is the slot that indexes the counter at position i.
func (cs *counters) slotOf(i int) int {
	mask := len(cs.slots) - 1
	j := cs.home(cs.list[i].key.hash)
	for cs.slots[j] != uint32(i+1) {
		j = (j + 1) & mask
	}
	return j
}

// unplace frees slot j, moving back into it each later key of its probe run that
// would otherwise no longer be found: one whose home is not after j, cyclically, up to
// its own slot. Linear probing needs no tombstones this way.
func (cs *counters) unplace(j int) {
	mask := len(cs.slots) - 1
	for n := (j + 1) & mask; cs.slots[n] != 0; n = (n + 1) & mask {
		h := cs.home(cs.list[cs.slots[n]-1].key.hash)
		// The key at n stays when its home lies cyclically in (j, n].
		if (h-j-1)&mask < (n-j)&mask {
			continue
		}
		cs.slots[j] = cs.slots[n]
		j = n
	}
	cs.slots[j] = 0
}
