package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// --pin gives the engine and the generator CPUs of their own, as a node with dedicated
// cores does (the kubelet's static CPU manager policy): the engine's answers are not
// queued behind the generator's work on one CPU, nor moved between CPUs mid-run.

// maxCPUs is the number of CPUs a unix.CPUSet can name.
const maxCPUs = 8 * int(unsafe.Sizeof(unix.CPUSet{}))

// pin puts the engine, process enginePID, on the last CPU and this process on the
// others, and says so.
func pin(enginePID int) (string, error) {
	engine, generator, err := pinSplit()
	if err != nil {
		return "", err
	}
	if err := pinProcess(strconv.Itoa(enginePID), &engine); err != nil {
		return "", err
	}
	if err := pinProcess("self", &generator); err != nil {
		return "", err
	}
	return fmt.Sprintf("engine pinned to CPU %s, generator to CPU %s (--pin)", cpuList(engine), cpuList(generator)), nil
}

// pinSplit divides the CPUs this process may use: the last for the engine, the others
// for the generator.
func pinSplit() (engine, generator unix.CPUSet, err error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return engine, generator, fmt.Errorf("--pin: reading the CPUs this process may use: %w", err)
	}
	if all.Count() < 2 {
		return engine, generator, errors.New("--pin needs at least two CPUs, one for the engine and one for the generator")
	}
	last := -1
	for c := range maxCPUs {
		if all.IsSet(c) {
			last = c
		}
	}
	generator = all
	generator.Clear(last)
	engine.Set(last)
	return engine, generator, nil
}

// pinProcess sets the affinity of every thread of process pid ("self" for this one) to
// set. A thread made later inherits its creator's affinity, so after two passes (the
// second for threads made during the first) the whole process stays on set.
func pinProcess(pid string, set *unix.CPUSet) error {
	for range 2 {
		tasks, err := os.ReadDir("/proc/" + pid + "/task")
		if err != nil {
			return fmt.Errorf("--pin: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("--pin: thread %d of process %s: %w", tid, pid, err)
			}
		}
	}
	return nil
}

// cpuList prints a set as the kernel's list format, "0-2,5".
func cpuList(set unix.CPUSet) string {
	s := ""
	for c := 0; c < maxCPUs; c++ {
		if !set.IsSet(c) {
			continue
		}
		end := c
		for end+1 < maxCPUs && set.IsSet(end+1) {
			end++
		}
		if s != "" {
			s += ","
		}
		if end == c {
			s += strconv.Itoa(c)
		} else {
			s += fmt.Sprintf("%d-%d", c, end)
		}
		c = end
	}
	return s
}
