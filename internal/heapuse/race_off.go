//go:build !race

package heapuse

// raceEnabled reports that the race detector is on: it makes allocations larger, so
// what the heap grows by is not what a build without it would take.
const raceEnabled = false
