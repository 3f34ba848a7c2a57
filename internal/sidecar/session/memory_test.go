package session

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/heapuse"
)

// TestBytesCoverTheHeap: filled to MaxBytes in the shapes that cost the heap the most
// per byte charged, or that the bound once missed (long session ids, a wide
// activity_window with one-byte steps), a store's sessions take at most half again
// MaxBytes of heap, fragmentation included (measured: up to 1.27 times, for full
// windows of short steps beside 1 KiB session ids). Only the byte bound binds; each
// shape reaches it. The injector's budget, a quarter of the sidecar's memory limit,
// leaves room for that half.
func TestBytesCoverTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("fills several stores of 16 MiB")
	}
	heapuse.SkipUnderRace(t)
	const budget = 16 << 20
	shapes := []struct {
		name string
		// fill makes session i's state in s.
		fill func(s *Store, i int)
	}{
		{"short ids, one unscoped counter", func(s *Store, i int) {
			s.Apply(engine.CounterKey{Rule: "acme/R", Session: fmt.Sprint(i)}, engine.ActionIncrementCounter)
		}},
		{"1 KiB ids, one counter with a 335-byte scope", func(s *Store, i int) {
			id := fmt.Sprintf("%01024d", i)
			scope := strings.Repeat("x", 327) + fmt.Sprintf("%08d", i)
			s.Apply(engine.CounterKey{Rule: "acme/R", Session: id, Scope: scope, Scoped: true}, engine.ActionIncrementCounter)
		}},
		{"500 counters a session, scoped by a fingerprint", func(s *Store, i int) {
			id := fmt.Sprint(i)
			for j := range 500 {
				scope := fmt.Sprintf("%064x", i*1000+j)
				s.Apply(engine.CounterKey{Rule: "acme/R", Session: id, Scope: scope, Scoped: true}, engine.ActionIncrementCounter)
			}
		}},
		{"an activity_window of 1,000, one-byte steps", func(s *Store, i int) {
			id := fmt.Sprint(i)
			for j := range 700 {
				s.Append(id, string(rune('a'+j%26)), 1000)
			}
		}},
		{"an activity_window of 2^20, one call", func(s *Store, i int) {
			s.Append(fmt.Sprint(i), "read", 1<<20)
		}},
		{"an activity_window of 16, full, 1 KiB ids", func(s *Store, i int) {
			id := fmt.Sprintf("%01024d", i)
			for j := range 40 {
				s.Append(id, fmt.Sprintf("tool_%d", j%7), 16)
			}
		}},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			before := heapuse.InUse()
			s := New(Options{MaxBytes: budget, MaxSessions: 1 << 30, MaxCounters: 1 << 30, MaxTotalCounters: 1 << 30})
			for i := 0; ; i++ {
				shape.fill(s, i)
				if lru, _ := s.Evictions(); lru > 0 {
					break
				}
			}
			// Go on filling past the first eviction, so that the heap holds what
			// evicted sessions left behind as well.
			sessions := s.Len()
			for i := range sessions {
				shape.fill(s, sessions+1_000_000+i)
			}
			grew := heapuse.InUse() - before
			s.mu.Lock()
			charged := s.bytes
			s.mu.Unlock()
			t.Logf("%d sessions charged %.1f MiB, heap grew %.1f MiB", s.Len(), float64(charged)/(1<<20), float64(grew)/(1<<20))
			if charged > budget || charged < budget*9/10 {
				t.Errorf("sessions charged %d bytes, want the bound %d reached and kept", charged, budget)
			}
			if grew > budget*3/2 {
				t.Errorf("the heap grew %d bytes for sessions bounded at %d: more than half over", grew, budget)
			}
			runtime.KeepAlive(s)
		})
	}
}
