//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system, every thread, the garbage collector's
// included) the process has used so far. On a machine shared with other work the wall
// clock measures the neighbours too; this does not.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
