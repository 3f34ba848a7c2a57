package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
)

// engineProc is a running oar-engine.
type engineProc struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
	logs   *tail
}

// startEngine mounts b in a new directory under work, starts the binary on a free
// loopback port against it, with env added to the generator's environment, and waits
// until it is ready.
func startEngine(ctx context.Context, bin, work string, b *bundle.Bundle, env ...string) (*engineProc, error) {
	dir, err := os.MkdirTemp(work, "bundle-")
	if err != nil {
		return nil, err
	}
	if err := kubeletdir.New(dir).PublishBundle(b); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", "0", "--probe-address", "", "--bundle-dir", dir)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w (run `make load`, which builds it)", bin, err)
	}
	e := &engineProc{cmd: cmd, exited: make(chan struct{}), logs: &tail{}}
	addr := make(chan string, 1)
	go e.readLogs(stderr, addr)
	go func() { _ = cmd.Wait(); close(e.exited) }()
	select {
	case a := <-addr:
		e.addr = a
	case <-e.exited:
		return nil, fmt.Errorf("%s exited: %s", bin, e.logs)
	case <-ctx.Done():
		e.stop()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		e.stop()
		return nil, fmt.Errorf("%s logged no serving address: %s", bin, e.logs)
	}
	if err := e.waitReady(ctx); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// readLogs keeps the last log lines and sends the API address once it is logged.
func (e *engineProc) readLogs(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		e.logs.add(sc.Text())
		var line struct{ Msg, Server, Address string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" && line.Server == "api" {
			addr <- line.Address
		}
	}
}

func (e *engineProc) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + e.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("oar-engine not ready after 30 s: %s", e.logs)
}

// stop sends SIGTERM and waits, killing the process if it lingers.
func (e *engineProc) stop() {
	select {
	case <-e.exited:
		return
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(15 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.exited
	}
}

// memory is what /proc/<pid>/status says, in KiB.
type memory struct{ rss, hwm int64 }

func (e *engineProc) rss() (memory, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(e.cmd.Process.Pid), "status"))
	if err != nil {
		return memory{}, fmt.Errorf("reading the engine's memory (Linux /proc): %w", err)
	}
	var m memory
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			m.rss, _ = strconv.ParseInt(f[1], 10, 64)
		case "VmHWM:":
			m.hwm, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if m.rss == 0 {
		return m, errors.New("no VmRSS in /proc/<pid>/status")
	}
	return m, nil
}

// metric reads one unlabelled sample from /metrics.
func (e *engineProc) metric(name string) (float64, error) {
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("/metrics has no %s", name)
}

// tail keeps the last few log lines for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, l)
	if len(t.lines) > 5 {
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// histogram is the engine's oar_engine_evaluation_duration_seconds: cumulative counts
// by upper bound, as /metrics exposes them.
type histogram struct {
	bounds []float64
	counts []float64
}

const latencyBucket = `oar_engine_evaluation_duration_seconds_bucket{le="`

func (e *engineProc) latencies() (histogram, error) {
	var h histogram
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), latencyBucket)
		le, count, found := strings.Cut(rest, `"} `)
		if !ok || !found || le == "+Inf" {
			continue
		}
		b, err1 := strconv.ParseFloat(le, 64)
		c, err2 := strconv.ParseFloat(count, 64)
		if err1 != nil || err2 != nil {
			return h, fmt.Errorf("/metrics: %q", sc.Text())
		}
		h.bounds, h.counts = append(h.bounds, b), append(h.counts, c)
	}
	return h, sc.Err()
}

// quantile returns the upper bound of the bucket holding quantile q of the
// evaluations between before and h, or 0 when it is past the last bound.
func (h histogram) quantile(before histogram, q float64) time.Duration {
	if len(h.counts) == 0 || len(before.counts) != len(h.counts) {
		return 0
	}
	total := h.counts[len(h.counts)-1] - before.counts[len(before.counts)-1]
	for i := range h.counts {
		if h.counts[i]-before.counts[i] >= q*total {
			return time.Duration(h.bounds[i] * float64(time.Second))
		}
	}
	return 0
}
