package session

import (
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// counterKey is engine.CounterKey within one session.
type counterKey struct {
	rule, scope string
	scoped      bool
}

func (k counterKey) compare(o counterKey) int {
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

// counters are one session's counters, sorted by key. A session holds few counters, and
// at that size a sorted slice takes about half the memory of a map, which matters when
// the table holds a hundred thousand sessions.
type counters []counter

// find returns the position of k, or where it belongs, and whether it is there.
func (cs counters) find(k counterKey) (int, bool) {
	return slices.BinarySearchFunc(cs, k, func(c counter, k counterKey) int { return c.key.compare(k) })
}

// insert adds c at position i, growing the slice by a quarter rather than doubling it.
func (cs counters) insert(i int, c counter) counters {
	if len(cs) == cap(cs) {
		grown := make(counters, len(cs), len(cs)+max(2, len(cs)/4))
		copy(grown, cs)
		cs = grown
	}
	return slices.Insert(cs, i, c)
}
