package admission

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"
	"sync"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

const (
	// loadsPerGeneration bounds the load results kept: at most two generations of this
	// many.
	loadsPerGeneration = 16
	// keptDiagnosticsMax bounds the diagnostics of a load result kept: a pack refused for
	// more is loaded again each time, rather than held in memory.
	keptDiagnosticsMax = 256
)

// loads caches what the loader says about a RulePack (packContext.load) by everything
// that depends on: the Capability's spec, each rule's JSON and the stand-ins loaded
// next to the rules. A pack applied with --dry-run=server and then for real, or
// validated again while its neighbours are unchanged, is loaded once. The diagnostics
// are shared: nothing modifies them (ruleErrors and loadWarnings copy each).
var loads = generations[[sha256.Size]byte, loadResult]{size: loadsPerGeneration}

// loadResult is what the loader said of a pack: why it refuses it, or the warnings it
// loads it with ([OAR-SEL-6]).
type loadResult struct {
	errs, warnings diag.List
}

// loadKey is the SHA-256 of a load's inputs: the Capability's spec (whose SHA-256 is
// capability; the stand-ins' anchor derives from it), the rules' JSON (by their
// SHA-256, in order) and the stand-ins' identifiers, in order.
func loadKey(capability [sha256.Size]byte, rules [][sha256.Size]byte, stubs []string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(capability[:])
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(rules))))
	for _, r := range rules {
		h.Write(r[:])
	}
	for _, q := range stubs {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(q))))
		h.Write([]byte(q))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// conditionsPerGeneration bounds the checked conditions kept: at most two generations
// of this many.
const conditionsPerGeneration = 10000

// conditions keeps what checking a condition found, where that depends only on its
// source and the Capability (engine.ConditionStore), by the SHA-256 of the Capability's
// spec and by the source itself: a pack edited one rule at a time has only that rule's condition
// checked again.
var conditions = generations[conditionKey, []types.Symbol]{size: conditionsPerGeneration}

// conditionKey is a condition's source under the Capability whose spec has the SHA-256
// capability.
type conditionKey struct {
	capability [sha256.Size]byte
	src        string
}

// conditionStore is conditions for the Capability whose spec has the SHA-256 capability.
type conditionStore struct {
	capability [sha256.Size]byte
}

var _ engine.ConditionStore = conditionStore{}

// Checked implements engine.ConditionStore.
func (s conditionStore) Checked(src string) ([]types.Symbol, bool) {
	return conditions.get(conditionKey{s.capability, src})
}

// KeepChecked implements engine.ConditionStore. The source is copied: it is cut from
// its rule's JSON (engine.SharedJSON), which it must not keep. The references are
// kept once for all the conditions that reference the same symbols in the same order
// (refLists).
func (s conditionStore) KeepChecked(src string, refs []types.Symbol) {
	conditions.put(conditionKey{s.capability, strings.Clone(src)}, refLists.intern(s.capability, refs))
}

// refListsMax bounds the reference lists refLists keeps; past it, they are forgotten
// and kept anew.
const refListsMax = 4096

// refLists holds one copy of each list of references the kept conditions have: the
// conditions of a set of rules mostly reference the same few symbols, so that ten
// thousand conditions kept hold a few lists of references, not ten thousand.
var refLists = &referenceLists{lists: map[string][]types.Symbol{}}

// referenceLists are reference lists by the SHA-256 of the Capability's spec followed
// by the symbols' names, in order, each ended by a NUL (which no name holds).
type referenceLists struct {
	mu    sync.Mutex
	lists map[string][]types.Symbol
	key   []byte
}

// intern returns the list of references kept that equals refs, under the Capability
// whose spec has the SHA-256 capability, and keeps refs when there is none. Under one
// Capability, a symbol is its name.
func (r *referenceLists) intern(capability [sha256.Size]byte, refs []types.Symbol) []types.Symbol {
	if len(refs) == 0 {
		return refs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.key = append(r.key[:0], capability[:]...)
	for _, sym := range refs {
		r.key = append(append(r.key, sym.Name...), 0)
	}
	if kept, ok := r.lists[string(r.key)]; ok {
		return kept
	}
	if len(r.lists) >= refListsMax {
		clear(r.lists)
	}
	kept := slices.Clip(refs)
	r.lists[string(r.key)] = kept
	return kept
}
