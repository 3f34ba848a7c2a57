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
var documents docCache

// docCache keeps the documents of the current generation and of the previous one; a
// document found in the previous generation moves to the current one, and a full
// current generation becomes the previous one.
type docCache struct {
	mu                sync.Mutex
	current, previous map[[sha256.Size]byte]any
}

// decodeRules decodes a RulePack's rules as resource.PackRules does — each with
// engine.DecodeJSON, a rule that is not JSON reported as a diagnostic on that rule —
// through documents, on every processor: the rules are independent.
func decodeRules(raws []apiextensionsv1.JSON) ([]any, diag.List) {
	rules := make([]any, len(raws))
	failed := make([]error, len(raws))
	workers := min(runtime.GOMAXPROCS(0), (len(raws)+rulesPerWorker-1)/rulesPerWorker)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(raws); i += workers {
				if len(raws[i].Raw) > 0 {
					rules[i], failed[i] = documents.decode(raws[i].Raw)
				}
			}
		})
	}
	wg.Wait()
	var errs diag.List
	for i, err := range failed {
		if err != nil {
			e := diag.New("OAR-DOC-1", "", "rule is not a JSON document: %v", err)
			e.Index = i
			errs.Add(e)
		}
	}
	return rules, errs
}

func (c *docCache) decode(raw []byte) (any, error) {
	key := sha256.Sum256(raw)
	c.mu.Lock()
	v, ok := c.current[key]
	if !ok {
		if v, ok = c.previous[key]; ok {
			c.put(key, v)
		}
	}
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := engine.DecodeJSON(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.put(key, v)
	c.mu.Unlock()
	return v, nil
}

// put adds a document to the current generation; the caller holds mu.
func (c *docCache) put(key [sha256.Size]byte, v any) {
	if len(c.current) >= documentsPerGeneration {
		c.previous, c.current = c.current, nil
	}
	if c.current == nil {
		c.current = make(map[[sha256.Size]byte]any, documentsPerGeneration)
	}
	c.current[key] = v
}
