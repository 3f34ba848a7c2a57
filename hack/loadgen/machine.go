package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// The machine is shared: what else ran during a rate decides how much its tail says
// about the engine, so every row reports the CPU the rest of the machine used and the
// load average.

// tick is the kernel's USER_HZ, the unit of /proc CPU times.
const tick = 10 * time.Millisecond

// machineCPU returns the CPU time all cores have spent busy since boot, and the time
// the hypervisor ran something else while a virtual CPU wanted to run (steal), from
// /proc/stat.
func machineCPU() (busy, steal time.Duration, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, errors.New("unexpected /proc/stat")
	}
	// user nice system idle iowait irq softirq steal
	var t [8]int64
	for i := range t {
		if t[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, 0, errors.New("unexpected /proc/stat")
		}
	}
	busy = time.Duration(t[0]+t[1]+t[2]+t[5]+t[6]) * tick
	return busy, time.Duration(t[7]) * tick, nil
}

// processCPU returns a process's user plus system CPU time (/proc/<pid>/stat).
func processCPU(pid string) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces; utime and stime
	// are fields 14 and 15.
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, errors.New("unexpected /proc/<pid>/stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unexpected /proc/<pid>/stat")
	}
	return time.Duration(utime+stime) * tick, nil
}

// cpuSample is the CPU time of the machine, the engine and the generator at one
// instant.
type cpuSample struct{ machine, steal, engine, self time.Duration }

func sampleCPU(enginePID int) (cpuSample, error) {
	var s cpuSample
	var err [3]error
	s.machine, s.steal, err[0] = machineCPU()
	s.engine, err[1] = processCPU(strconv.Itoa(enginePID))
	s.self, err[2] = processCPU("self")
	return s, errors.Join(err[:]...)
}

// cpuShares are the cores each used between two samples over wall time d, and the
// cores' worth of time the hypervisor stole.
type cpuShares struct{ engine, self, others, steal float64 }

func (s cpuSample) since(before cpuSample, d time.Duration) cpuShares {
	cores := func(t time.Duration) float64 { return t.Seconds() / d.Seconds() }
	engine, self := s.engine-before.engine, s.self-before.self
	return cpuShares{engine: cores(engine), self: cores(self), others: max(0, cores(s.machine-before.machine-engine-self)),
		steal: cores(s.steal - before.steal)}
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
