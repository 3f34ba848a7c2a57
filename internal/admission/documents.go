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
	size              int
	mu                sync.Mutex
	current, previous map[K]V
}

// decodeRules decodes a RulePack's rules as resource.PackRules does — each with
// engine.DecodeJSON, a rule that is not JSON reported as a diagnostic on that rule —
// through documents, on every processor: the rules are independent. Each processor
// decodes with an engine.SharedJSON, which decodes the same: documents keeps the rules
// whole, and a pack's rules together. qids are the rules' qualified identifiers
// (qualifiedIDs), sums the SHA-256 of each rule's JSON (zero for an empty one).
func decodeRules(raws []apiextensionsv1.JSON) (rules []any, qids []string, sums [][sha256.Size]byte, errs diag.List) {
	rules = make([]any, len(raws))
	qids = make([]string, len(raws))
	sums = make([][sha256.Size]byte, len(raws))
	failed := make([]error, len(raws))
	workers := min(runtime.GOMAXPROCS(0), (len(raws)+rulesPerWorker-1)/rulesPerWorker)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var shared engine.SharedJSON
			for i := w; i < len(raws); i += workers {
				if len(raws[i].Raw) > 0 {
					sums[i] = sha256.Sum256(raws[i].Raw)
					var d document
					d, failed[i] = decode(&shared, sums[i], raws[i].Raw)
					rules[i], qids[i] = d.v, d.qid
				}
			}
		})
	}
	wg.Wait()
	for i, err := range failed {
		if err != nil {
			e := diag.New("OAR-DOC-1", "", "rule is not a JSON document: %v", err)
			e.Index = i
			errs.Add(e)
		}
	}
	return rules, qids, sums, errs
}

// decode returns the document raw, whose SHA-256 is key, through documents, decoding
// it with shared.
func decode(shared *engine.SharedJSON, key [sha256.Size]byte, raw []byte) (document, error) {
	if d, ok := documents.get(key); ok {
		return d, nil
	}
	v, err := shared.Decode(raw)
	if err != nil {
		return document{}, err
	}
	d := document{v: v}
	d.qid, _ = engine.QualifiedID(v)
	documents.put(key, d)
	return d, nil
}

// get returns the entry under key, if either generation holds it.
func (g *generations[K, V]) get(key K) (V, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
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
		g.previous, g.current = g.current, nil
	}
	if g.current == nil {
		g.current = make(map[K]V, g.size)
	}
	g.current[key] = v
}
