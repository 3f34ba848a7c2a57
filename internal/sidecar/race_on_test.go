//go:build race

package sidecar

// raceEnabled reports a build with the race detector, whose sync.Pool drops pooled
// values at random, so allocation counts are not those of a normal build.
const raceEnabled = true
