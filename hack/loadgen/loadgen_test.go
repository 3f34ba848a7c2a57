package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/occurrence"
)

// TestScaledBundle: the memory measurement's 1,000-rule bundle loads, each copy of the
// bench rules under its own namespace.
func TestScaledBundle(t *testing.T) {
	d, err := readBench("../../cmd/oarctl/testdata/bench")
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.bundle(1000)
	if err != nil {
		t.Fatal(err)
	}
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.RuleSet.Rules); n != 1000 {
		t.Fatalf("%d rules, want 1000", n)
	}
	if q := l.RuleSet.Rules[999].QID; !strings.HasPrefix(q, "bench.copy9/") {
		t.Errorf("the last rule is %s, want one of bench.copy9", q)
	}
	bodies, err := d.requests(3)
	if err != nil || len(bodies) != 3*len(d.occurrences) || !strings.Contains(string(bodies[len(bodies)-1]), `"session_id":"load-2"`) {
		t.Errorf("requests: %v, %d bodies", err, len(bodies))
	}
}

func TestQuantiles(t *testing.T) {
	sorted := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if p50, p99 := percentile(sorted, 0.5), percentile(sorted, 0.99); p50 != 6 || p99 != 10 {
		t.Errorf("p50 %v p99 %v", p50, p99)
	}
	before := histogram{bounds: []float64{1e-5, 2e-5, 4e-5}, counts: []float64{0, 5, 10}}
	after := histogram{bounds: []float64{1e-5, 2e-5, 4e-5}, counts: []float64{50, 97, 110}}
	if q := after.quantile(before, 0.5); q != 10*time.Microsecond {
		t.Errorf("p50 %v, want the 10µs bucket (50 of 100 new samples)", q)
	}
	if q := after.quantile(before, 0.99); q != 40*time.Microsecond {
		t.Errorf("p99 %v, want the 40µs bucket", q)
	}
}

// TestRoundTripAllocatesNothing: the generator's own allocations would add collector
// pauses to the latencies it measures. The peer is a raw server that allocates
// nothing either, since the count is the whole process's.
func TestRoundTripAllocatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	req := render(addr, "/v1/evaluate", []byte(`{"anchor":"a"}`))
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"decision\":\"ok\"}")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, len(req))
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	}()
	k := newConn(addr)
	defer k.close()
	allocs := testing.AllocsPerRun(100, func() {
		var status int
		var body []byte
		if status, body, err = k.do(req); err == nil && (status != 200 || string(body) != `{"decision":"ok"}`) {
			err = fmt.Errorf("status %d, body %s", status, body)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("a round trip allocates %v times", allocs)
	}
}

// TestFloorRequest: the floor's GET is a complete request a server reads to its blank
// line, and its answer is read like any other.
func TestFloorRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var head []byte
		buf := make([]byte, 1)
		for !strings.HasSuffix(string(head), "\r\n\r\n") {
			if _, err := c.Read(buf); err != nil {
				return
			}
			head = append(head, buf[0])
		}
		got <- string(head)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"status\":\"ok\"}")
	}()
	k := newConn(addr)
	defer k.close()
	status, body, err := k.do(renderGet(addr, "/healthz"))
	if err != nil || status != 200 || string(body) != `{"status":"ok"}` {
		t.Fatalf("status %d, body %q, err %v", status, body, err)
	}
	if want := "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"; <-got != want {
		t.Errorf("the server read a different request, want %q", want)
	}
}

func TestCPUList(t *testing.T) {
	var set unix.CPUSet
	for _, c := range []int{0, 1, 2, 5, 7, 8} {
		set.Set(c)
	}
	if got := cpuList(set); got != "0-2,5,7-8" {
		t.Errorf("cpuList = %q, want 0-2,5,7-8", got)
	}
}

// TestPinProcess: every thread of a running process ends on the CPU it is pinned to,
// as the kernel reports it.
func TestPinProcess(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	first := -1
	for c := range maxCPUs {
		if all.IsSet(c) {
			first = c
			break
		}
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var one unix.CPUSet
	one.Set(first)
	pid := strconv.Itoa(cmd.Process.Pid)
	if err := pinProcess(pid, &one); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Cpus_allowed_list:\t" + strconv.Itoa(first) + "\n"; !strings.Contains(string(status), want) {
		t.Errorf("/proc/%s/status does not say %q", pid, want)
	}
}

// TestFloodCall: a flood call is as long as asked, within one item, so it stays under
// --max-body-bytes, and is an occurrence the engine reads.
func TestFloodCall(t *testing.T) {
	for _, n := range []int{200, 1000, 1 << 20} {
		body := floodCall(n)
		if len(body) > n || len(body) < n-len(`,{"a":1}`) {
			t.Errorf("floodCall(%d) is %d bytes", n, len(body))
		}
		if _, errs := occurrence.Decode(body, occurrence.HostMembers); errs != nil {
			t.Errorf("floodCall(%d): %v", n, errs)
		}
	}
}
