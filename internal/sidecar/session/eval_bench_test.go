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
// two scope values), the counter actions of 4 fired rules (one scoped), unpinned; 100
// sessions in turn from one goroutine. An op is one evaluation.
func BenchmarkStoreEvaluation(b *testing.B) { benchmarkEvaluation(b, false) }

// BenchmarkStoreEvaluationGrowing is BenchmarkStoreEvaluation with the sessions
// gathering counters as those of `oarctl bench` on the generated workload do (62 to 130
// each after 100 evaluations): each evaluation reads the scoped rules under its own
// tool arguments' fingerprint and the previous one's, and one of its counter actions
// adds the counter of its fingerprint. The sessions begin again every 100 evaluations
// each, as the bench's do, outside the measured time.
func BenchmarkStoreEvaluationGrowing(b *testing.B) { benchmarkEvaluation(b, true) }

func benchmarkEvaluation(b *testing.B, growing bool) {
	const sessions, perSession = 100, 100
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("7f3c9a2e-41d8-4b6a-9e0f-%012d", i)
	}
	fingerprints := make([]string, perSession+1)
	for i := range fingerprints {
		sum := sha256.Sum256(fmt.Appendf(nil, "args-%d", i))
		fingerprints[i] = hex.EncodeToString(sum[:])
	}
	// A scoped read's age is 1 under the evaluation's own fingerprint, 0 under the
	// previous evaluation's.
	type read struct {
		key engine.CounterKey
		age int
	}
	var reads []read
	for r := range 12 {
		rule := fmt.Sprintf("acme.tenant03.pack/RULE_%04d", 40+r)
		if r%3 != 0 {
			reads = append(reads, read{key: engine.CounterKey{Rule: rule}})
			continue
		}
		for age := range 2 {
			reads = append(reads, read{engine.CounterKey{Rule: rule, Scope: fingerprints[age], Scoped: true}, age})
		}
	}
	writes := []read{reads[1], reads[3], reads[6], reads[15]}
	// keyOf is r's key in session id at the session's n-th evaluation.
	keyOf := func(r read, id string, n int) engine.CounterKey {
		k := r.key
		k.Session = id
		if growing && k.Scoped {
			k.Scope = fingerprints[n+r.age]
		}
		return k
	}
	s := New(Options{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := ids[i%sessions]
		n := i / sessions // the evaluation's number in its session
		i++
		if growing && n == perSession {
			b.StopTimer()
			s, i, n = New(Options{}), 1, 0
			b.StartTimer()
		}
		s.Pin(id)
		for _, r := range reads {
			if _, err := s.Get(keyOf(r, id, n)); err != nil {
				b.Fatal(err)
			}
		}
		for _, r := range writes {
			if _, err := s.Apply(keyOf(r, id, n), engine.ActionIncrementCounter); err != nil {
				b.Fatal(err)
			}
		}
		s.Unpin(id)
	}
}
