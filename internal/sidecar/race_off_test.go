//go:build !race

package sidecar

const raceEnabled = false
