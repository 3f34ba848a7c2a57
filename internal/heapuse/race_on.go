//go:build race

package heapuse

// Race reports that the race detector is on: it makes allocations larger, so what the
// heap grows by is not what a build without it would take.
const Race = true
