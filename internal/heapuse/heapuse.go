// Package heapuse measures, in tests, the heap a structure takes: the bounds of the
// sidecar's session stores are in bytes of heap, and their tests fill a store to its
// bound and compare what the heap grew by with what the store charged.
package heapuse

import (
	"runtime"
	"testing"
)

// InUse is the heap's spans in use once the collector has freed what it can: what the
// live objects take, fragmentation included, as the process's memory would. The
// second collection frees what the first one's finalizers and sweeping left.
func InUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// SkipUnderRace skips t when the race detector is on: what the heap grows by is
// then not what a build without it would take.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("the race detector makes every allocation larger")
	}
}
