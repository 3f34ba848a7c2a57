package session

import (
	"slices"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// TestCountersTellApartKeysWhoseHashesCollide: the counters are ordered by a hash of
// their key first, and keys whose hashes are equal are still different counters, each
// found where it was inserted.
func TestCountersTellApartKeysWhoseHashesCollide(t *testing.T) {
	keys := []engine.CounterKey{
		{Rule: "acme.a/R"},
		{Rule: "acme.a/R", Scoped: true},
		{Rule: "acme.a/R", Scope: "x", Scoped: true},
		{Rule: "acme.a/S"},
		{Rule: "acme.a/S", Scope: "x", Scoped: true},
	}
	var cs counters
	for n, k := range keys {
		var key counterKey
		key.set(&k)
		key.hash = 7 // every key collides
		i, found := cs.find(&key)
		if found {
			t.Fatalf("%+v found before it was inserted", k)
		}
		cs = slices.Insert(cs, i, counter{key: key, counts: engine.Counts{Fire: int64(n + 1)}})
	}
	for n, k := range keys {
		var key counterKey
		key.set(&k)
		key.hash = 7
		if i, found := cs.find(&key); !found || cs[i].counts.Fire != int64(n+1) {
			t.Errorf("%+v: found %v at %d, want the counter inserted %d-th", k, found, i, n+1)
		}
	}
}

// TestCounterKeysHashApart: a rule's unscoped counter, its counter under the empty
// scope and under another scope have different hashes, so they are told apart without
// comparing strings.
func TestCounterKeysHashApart(t *testing.T) {
	seen := map[uint64]engine.CounterKey{}
	for _, k := range []engine.CounterKey{
		{Rule: "acme.a/R"},
		{Rule: "acme.a/R", Scoped: true},
		{Rule: "acme.a/R", Scope: "x", Scoped: true},
		{Rule: "acme.a/S"},
	} {
		var key counterKey
		key.set(&k)
		h := key.hash
		if other, ok := seen[h]; ok {
			t.Errorf("%+v and %+v hash alike", k, other)
		}
		seen[h] = k
	}
}
