// Package heapuse measures, in tests, the heap a structure takes: the bounds of the
// sidecar's session stores are in bytes of heap, and their tests fill a store to its
// bound and compare what the heap grew by with what the store charged.
package heapuse

import "runtime"

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
