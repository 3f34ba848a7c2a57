//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, every thread's, the garbage
// collector's included: on a machine shared with other work the wall clock of a
// benchmark measures the neighbours too.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
