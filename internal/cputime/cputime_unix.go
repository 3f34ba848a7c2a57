//go:build unix

// Package cputime reads the CPU time the process has used, for benchmarks on machines
// shared with other work, where the wall clock measures the neighbours too.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time (user and system, every thread, the garbage collector's
// included) the process has used so far; false where it cannot be read.
func Process() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
