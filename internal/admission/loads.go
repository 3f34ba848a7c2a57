package admission

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// loadsPerGeneration bounds the load results kept: at most two generations of this
// many.
const loadsPerGeneration = 32

// loads caches what the loader says about a RulePack (packContext.load) by everything
// that depends on: the Capability's spec, each rule's JSON and the stand-ins loaded
// next to the rules. A pack applied with --dry-run=server and then for real, or
// validated again while its neighbours are unchanged, is loaded once. The diagnostics
// are shared: nothing modifies them (ruleErrors copies each).
var loads = generations[diag.List]{size: loadsPerGeneration}

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
