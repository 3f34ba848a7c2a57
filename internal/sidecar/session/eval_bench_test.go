package session

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// BenchmarkStoreEvaluation is the store's share of one tool.pre_invoke evaluation, as
// the engine makes it: its session pinned, 16 counter reads of 12 rules (qualified ids
// sharing a long prefix, four rules scoped by a tool_args_fingerprint, each read under
// two scope values), the counter actions of 4 fired rules, unpinned; 100 sessions in
// turn from one goroutine. An op is one evaluation.
func BenchmarkStoreEvaluation(b *testing.B) {
	s := New(Options{})
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("7f3c9a2e-41d8-4b6a-9e0f-%012d", i)
	}
	var reads []engine.CounterKey
	for r := range 12 {
		rule := fmt.Sprintf("acme.tenant03.pack/RULE_%04d", 40+r)
		if r%3 != 0 {
			reads = append(reads, engine.CounterKey{Rule: rule})
			continue
		}
		for v := range 2 {
			sum := sha256.Sum256(fmt.Appendf(nil, "args-%d-%d", r, v))
			reads = append(reads, engine.CounterKey{Rule: rule, Scope: hex.EncodeToString(sum[:]), Scoped: true})
		}
	}
	writes := []engine.CounterKey{reads[1], reads[4], reads[9], reads[15]}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := ids[i%len(ids)]
		i++
		s.Pin(id)
		for _, k := range reads {
			k.Session = id
			if _, err := s.Get(k); err != nil {
				b.Fatal(err)
			}
		}
		for _, k := range writes {
			k.Session = id
			if _, err := s.Apply(k, engine.ActionIncrementCounter); err != nil {
				b.Fatal(err)
			}
		}
		s.Unpin(id)
	}
}
