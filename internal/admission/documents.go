package admission

import (
	"crypto/sha256"
	"runtime"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

const (
	// documentsPerGeneration bounds the decoded rule documents kept: at most two
	// generations of this many.
	documentsPerGeneration = 5000
	// rulesPerWorker is the fewest rules worth a goroutine of their own.
	rulesPerWorker = 64
)

// documents caches decoded rule documents by the SHA-256 of their JSON, so a pack
// applied with --dry-run=server and then for real, or edited one rule at a time, is
// decoded once. The documents are shared: nothing modifies a decoded document.
var documents = generations[[sha256.Size]byte, document]{size: documentsPerGeneration}

// document is a decoded rule document and its qualified identifier (engine.QualifiedID,
// "" where malformed).
type document struct {
	v   any
	qid string
}

// generations is a cache that keeps the entries of the current generation and
// of the previous one; an entry found in the previous generation moves to the current
// one, and a full current generation becomes the previous one.
type generations[K comparable, V any] struct {
	size int
	// mu is held for reading to look an entry up, and for writing to add one or move
	// one found in the previous generation: readers do not wait for one another.
	mu                sync.RWMutex
	current, previous map[K]V
}

// decodeRules decodes a RulePack's rules as resource.PackRules does — each with
// engine.DecodeJSON, a rule that is not JSON reported as a diagnostic on that rule —
// through documents, on every processor: the rules are independent. Each processor
// decodes with an engine.SharedJSON, which decodes the same: documents keeps the rules
// whole, and a pack's rules together. documents is locked twice, once to find the
// rules decoded before and once to keep the others. qids are the rules' qualified
// identifiers (qualifiedIDs), sums the SHA-256 of each rule's JSON (zero for an empty
// one).
func decodeRules(raws []apiextensionsv1.JSON) (rules []any, qids []string, sums [][sha256.Size]byte, errs diag.List) {
	rules = make([]any, len(raws))
	qids = make([]string, len(raws))
	sums = make([][sha256.Size]byte, len(raws))
	spread(len(raws), func(i int, _ *engine.SharedJSON) {
		if len(raws[i].Raw) > 0 {
			sums[i] = sha256.Sum256(raws[i].Raw)
		}
	})
	// found says which rules documents holds.
	found := make([]bool, len(raws))
	missing := 0
	documents.getAll(func(get func([sha256.Size]byte) (document, bool)) {
		for i, raw := range raws {
			if len(raw.Raw) > 0 {
				var d document
				if d, found[i] = get(sums[i]); !found[i] {
					missing++
				}
				rules[i], qids[i] = d.v, d.qid
			}
		}
	})
	if missing == 0 {
		return rules, qids, sums, nil
	}
	failed := make([]error, len(raws))
	spread(len(raws), func(i int, shared *engine.SharedJSON) {
		if len(raws[i].Raw) > 0 && !found[i] {
			var v any
			if v, failed[i] = shared.Decode(raws[i].Raw); failed[i] == nil {
				rules[i] = v
				qids[i], _ = engine.QualifiedID(v)
			}
		}
	})
	documents.putAll(func(put func([sha256.Size]byte, document)) {
		for i, raw := range raws {
			if len(raw.Raw) > 0 && !found[i] && failed[i] == nil {
				put(sums[i], document{v: rules[i], qid: qids[i]})
			}
		}
	})
	for i, err := range failed {
		if err != nil {
			e := diag.New("OAR-DOC-1", "", "rule is not a JSON document: %v", err)
			e.Index = i
			errs.Add(e)
		}
	}
	return rules, qids, sums, errs
}

// spread calls f for every index below n, on every processor when n is large enough,
// each processor with an engine.SharedJSON of its own. f must touch only what belongs
// to its index.
func spread(n int, f func(i int, shared *engine.SharedJSON)) {
	workers := min(runtime.GOMAXPROCS(0), (n+rulesPerWorker-1)/rulesPerWorker)
	if workers <= 1 {
		var shared engine.SharedJSON
		for i := range n {
			f(i, &shared)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var shared engine.SharedJSON
			for i := w; i < n; i += workers {
				f(i, &shared)
			}
		})
	}
	wg.Wait()
}

// getAll calls look with a function that returns the entry under a key, if either
// generation holds it, under one lock.
func (g *generations[K, V]) getAll(look func(get func(K) (V, bool))) {
	g.mu.Lock()
	defer g.mu.Unlock()
	look(g.getLocked)
}

// putAll calls keep with a function that adds an entry to the current generation,
// under one lock.
func (g *generations[K, V]) putAll(keep func(put func(K, V))) {
	g.mu.Lock()
	defer g.mu.Unlock()
	keep(g.putLocked)
}

// get returns the entry under key, if either generation holds it.
func (g *generations[K, V]) get(key K) (V, bool) {
	g.mu.RLock()
	v, ok := g.current[key]
	previous := false
	if !ok {
		_, previous = g.previous[key]
	}
	g.mu.RUnlock()
	if ok || !previous {
		return v, ok
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.getLocked(key)
}

func (g *generations[K, V]) getLocked(key K) (V, bool) {
	v, ok := g.current[key]
	if !ok {
		if v, ok = g.previous[key]; ok {
			g.putLocked(key, v)
		}
	}
	return v, ok
}

// put adds an entry to the current generation.
func (g *generations[K, V]) put(key K, v V) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.putLocked(key, v)
}

func (g *generations[K, V]) putLocked(key K, v V) {
	if len(g.current) >= g.size {
		// The previous generation's map, emptied, holds the next one: a map of this
		// size is made twice, not at every turn.
		g.previous, g.current = g.current, g.previous
		clear(g.current)
	}
	if g.current == nil {
		g.current = make(map[K]V, g.size)
	}
	g.current[key] = v
}
