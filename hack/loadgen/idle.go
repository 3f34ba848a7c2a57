package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
)

// On a virtual machine an idle virtual CPU halts, and waking it for a request is a
// trip through the hypervisor that waits for a host CPU: at 1,000 requests a second
// every request finds the CPUs idle, so that wake, not the engine, makes the tail.
// A latency-tuned node keeps its CPUs out of halt with a PM QoS request (tuned's
// latency-performance profile, the Node Tuning Operator's low-latency profiles);
// --idle-poll makes the same request for the length of the run, so a run can show
// the engine's tail with and without the machine's wake cost.

// pmQoSDevice takes a CPU wake-up latency limit in microseconds, as a 32-bit integer,
// and holds it while the file stays open (Documentation/power/pm_qos_interface.rst).
const pmQoSDevice = "/dev/cpu_dma_latency"

// holdIdlePoll asks the kernel for a zero wake-up latency, which keeps every CPU in
// its polling idle state, until the returned release is called.
func holdIdlePoll() (release func(), err error) {
	f, err := os.OpenFile(pmQoSDevice, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("--idle-poll: %w (it needs root)", err)
	}
	if err := binary.Write(f, binary.NativeEndian, int32(0)); err != nil {
		f.Close()
		return nil, fmt.Errorf("--idle-poll: writing %s: %w", pmQoSDevice, err)
	}
	return func() { f.Close() }, nil
}

// cpuIdle describes how the CPUs idle: the cpuidle driver and governor, and whether
// the run holds them out of halt.
func cpuIdle(polling bool) string {
	read := func(name string) string {
		data, err := os.ReadFile("/sys/devices/system/cpu/cpuidle/" + name)
		if err != nil {
			return "?"
		}
		return strings.TrimSpace(string(data))
	}
	s := fmt.Sprintf("CPU idle: driver %s, governor %s", read("current_driver"), read("current_governor"))
	if polling {
		return s + "; held out of halt for the run (--idle-poll: PM QoS wake-up latency 0 µs)"
	}
	return s + "; idle CPUs halt (the default; --idle-poll keeps them polling, as a latency-tuned node does)"
}
