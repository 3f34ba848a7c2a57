package session

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// TestCountersTellApartKeysWhoseHashesCollide: keys whose hashes are equal are still
// different counters, each found where it was added, with and without the index.
func TestCountersTellApartKeysWhoseHashesCollide(t *testing.T) {
	keys := []engine.CounterKey{
		{Rule: "acme.a/R"},
		{Rule: "acme.a/R", Scoped: true},
		{Rule: "acme.a/R", Scope: "x", Scoped: true},
		{Rule: "acme.a/S"},
		{Rule: "acme.a/S", Scope: "x", Scoped: true},
	}
	for n := 6; n <= 40; n++ {
		keys = append(keys, engine.CounterKey{Rule: "acme.a/T", Scope: fmt.Sprint(n), Scoped: true})
	}
	collided := func(k engine.CounterKey) *counterKey {
		var key counterKey
		key.set(&k)
		key.hash = 7 // every key collides
		return &key
	}
	var cs counters
	for n, k := range keys {
		if _, found := cs.find(collided(k)); found {
			t.Fatalf("%+v found before it was added", k)
		}
		cs.list[cs.add(collided(k))].counts.Fire = int64(n + 1)
		for m, k := range keys[:n+1] {
			if i, found := cs.find(collided(k)); !found || cs.list[i].counts.Fire != int64(m+1) {
				t.Fatalf("with %d counters, %+v: found %v at %d, want the counter added %d-th", n+1, k, found, i, m+1)
			}
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

// TestCountersAgreeWithAMap adds and removes counters at random, as Apply and Restore
// do, and after each step finds every key a map holds, and none it does not, at the
// counts the map says. The hashes are drawn from few values whose top bits are alike,
// so probe runs are long, wrap around the end of the index and are broken by removals
// in their middle, as the index grows past scanned counters and shrinks below it.
func TestCountersAgreeWithAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		hashes := make([]uint64, 1+rng.IntN(40))
		for i := range hashes {
			hashes[i] = rng.Uint64()
			if i%2 == 1 {
				hashes[i] = hashes[i-1] ^ uint64(rng.IntN(1<<20)) // same top bits
			}
		}
		keyOf := func(n int) *counterKey {
			k := engine.CounterKey{Rule: "acme.a/R", Scope: fmt.Sprint(n), Scoped: true}
			var key counterKey
			key.set(&k)
			key.hash = hashes[n%len(hashes)]
			return &key
		}
		var cs counters
		model := map[int]int64{}
		for step := range 2000 {
			n := rng.IntN(80)
			key := keyOf(n)
			i, found := cs.find(key)
			if _, held := model[n]; found != held {
				t.Fatalf("seed %d, step %d: key %d found %v, held %v", seed, step, n, found, held)
			}
			switch {
			case !found:
				cs.list[cs.add(key)].counts.Fire = int64(step)
				model[n] = int64(step)
			case rng.IntN(3) == 0:
				cs.remove(i)
				delete(model, n)
			}
			if cs.len() != len(model) {
				t.Fatalf("seed %d, step %d: %d counters, want %d", seed, step, cs.len(), len(model))
			}
			if want := cs.len() > scanned; (cs.slots != nil) != want {
				t.Fatalf("seed %d, step %d: %d counters, indexed %v", seed, step, cs.len(), cs.slots != nil)
			}
			for m := range 80 {
				i, found := cs.find(keyOf(m))
				fire, held := model[m]
				if found != held || found && cs.list[i].counts.Fire != fire {
					t.Fatalf("seed %d, step %d: key %d found %v at %d, model holds %v (fire %d)", seed, step, m, found, i, held, fire)
				}
			}
		}
	}
}
