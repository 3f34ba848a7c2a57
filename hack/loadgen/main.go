// Command loadgen measures the engine sidecar from a second process (`make load`,
// `make bench-sidecar`). It builds a bundle from the `oarctl bench` documents, lays it
// out the way the kubelet mounts a ConfigMap, starts oar-engine on loopback against it,
// and sends POST /v1/evaluate at fixed rates, open loop (requests leave on schedule
// whatever the answers do; latency counts from the scheduled send, so a stall is never
// hidden) over keep-alive connections, with a client that allocates nothing per request.
// It reports, per rate and run, the achieved rate, latency percentiles and errors, the
// engine's own histogram, and the CPU the engine, the generator and the rest of the
// machine used and the hypervisor stole: on a shared virtual machine the tail follows the
// steal (a virtual CPU woken for a request waits for the host), so a row is only as
// telling as its steal is small.
// --floor follows each run with one of GET /healthz, the same server and connections
// without the evaluation, so a row can be read against the machine's own floor, and
// --idle-poll keeps the CPUs out of idle halt for the runs (idle.go), and --pin gives
// the engine and the generator CPUs of their own (pin.go).
// Then it starts a fresh oar-engine with a bundle of --rss-rules rules, drives
// --rss-sessions distinct sessions through it, and reports its resident memory (VmRSS
// of /proc/<pid>/status). Last, it floods a fresh one with --flood-calls large tool
// calls at once and reports its peak memory (flood.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	engine      string
	benchDir    string
	rates       []int
	duration    time.Duration
	conns       int
	sessions    int
	rssRules    int
	rssSessions int
	rssIDBytes  int
	floodCalls  int
	floodBytes  int
	runs        int
	procs       int
	idlePoll    bool
	floor       bool
	pin         bool
	serve       bool
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	if o.procs > 0 {
		runtime.GOMAXPROCS(o.procs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&o.engine, "engine", "bin/oar-engine", "the oar-engine `binary` to start")
	fs.StringVar(&o.benchDir, "bench", "cmd/oarctl/testdata/bench", "`directory` holding capability.yaml, rules.yaml and occurrences.jsonl")
	rates := fs.String("rates", "1000,10000", "comma-separated request `rates` per second, each run for --duration")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each rate runs")
	fs.IntVar(&o.conns, "conns", 64, "keep-alive connections, the most requests in flight at once")
	fs.IntVar(&o.runs, "runs", 1, "how many times each rate runs, a row each")
	fs.IntVar(&o.procs, "procs", 0, "GOMAXPROCS of the generator itself, not of the engine (0: Go's default)")
	fs.IntVar(&o.sessions, "sessions", 1000, "distinct session ids the load spreads over")
	fs.IntVar(&o.rssRules, "rss-rules", 1000, "rules in the bundle of the memory measurement (copies of the bench rules); 0 skips it")
	fs.IntVar(&o.rssSessions, "rss-sessions", 10000, "distinct sessions driven through the engine before its memory is read")
	fs.IntVar(&o.rssIDBytes, "rss-session-id-bytes", 0, "`bytes` of each session_id of the memory measurement, padded with zeros (at most 1,024, the sidecar's limit)")
	fs.IntVar(&o.floodCalls, "flood-calls", 256, "tool calls sent over --conns connections at once to a fresh engine with the injected sidecar's GOMEMLIMIT and GOMAXPROCS, to report its peak memory; 0 skips it")
	fs.IntVar(&o.floodBytes, "flood-bytes", 1<<20, "`bytes` of each flood call, whose arguments are a list of one-member objects (what decodes to the most heap per byte)")
	fs.BoolVar(&o.idlePoll, "idle-poll", false, "keep the CPUs polling instead of halting while the rates run, as a latency-tuned node does (PM QoS through /dev/cpu_dma_latency; needs root)")
	fs.BoolVar(&o.floor, "floor", false, "after each rate's run, run GET /healthz at the same rate on the same engine and connections: the part of the latency that is not the evaluation")
	fs.BoolVar(&o.pin, "pin", false, "run the engine on the last CPU and the generator on the others, as on a node with dedicated cores")
	fs.BoolVar(&o.serve, "serve", false, "only start oar-engine on the bench bundle, print its address, and wait for an interrupt (to try it with curl)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, r := range strings.Split(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("--rates: %q is not a positive rate", r)
		}
		o.rates = append(o.rates, n)
	}
	if o.duration <= 0 || o.conns <= 0 || o.sessions <= 0 || o.rssSessions <= 0 || o.runs <= 0 || o.rssRules < 0 || o.procs < 0 ||
		o.floodCalls < 0 || o.floodBytes <= 0 || o.rssIDBytes < 0 || o.rssIDBytes > 1024 {
		return o, errors.New("--duration, --conns, --sessions, --rss-sessions, --runs and --flood-bytes must be positive, --rss-session-id-bytes at most 1,024")
	}
	return o, nil
}

func run(ctx context.Context, o options, out io.Writer) error {
	docs, err := readBench(o.benchDir)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "oar-loadgen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	b, err := docs.bundle(len(docs.rules))
	if err != nil {
		return err
	}
	eng, err := startEngine(ctx, o.engine, work, b)
	if err != nil {
		return err
	}
	defer eng.stop()
	if o.serve {
		fmt.Fprintf(out, "oar-engine serves the %d-rule bench bundle on http://%s; interrupt to stop\n", len(b.Packs[0].Rules), eng.addr)
		<-ctx.Done()
		return nil
	}
	bodies, err := docs.requests(o.sessions)
	if err != nil {
		return err
	}
	reqs := make([][]byte, len(bodies))
	for i, body := range bodies {
		reqs[i] = render(eng.addr, "/v1/evaluate", body)
	}
	probes := [][]byte{renderGet(eng.addr, "/healthz")}
	placement := "engine and generator share every CPU (--pin gives each its own)"
	if o.pin {
		if placement, err = pin(eng.cmd.Process.Pid); err != nil {
			return err
		}
	}
	if o.idlePoll {
		release, err := holdIdlePoll()
		if err != nil {
			return err
		}
		defer release()
	}
	fmt.Fprintf(out, "oar-engine load run: %d-rule bundle %s, %d occurrences over %d sessions, %d keep-alive connections, open loop\n",
		len(b.Packs[0].Rules), b.Digest[:19], len(docs.occurrences), o.sessions, o.conns)
	fmt.Fprintf(out, "latency from the scheduled send to the whole answer; in the engine, the handler's share (its histogram's bucket bounds)\n")
	fmt.Fprintln(out, cpuIdle(o.idlePoll))
	fmt.Fprintln(out, "CPUs: "+placement)
	fmt.Fprintf(out, "CPU in cores: the engine's, the generator's, the rest of the machine's (%d cores), and the time the hypervisor stole; load average after each run\n", runtime.NumCPU())
	fmt.Fprintf(out, headFormat, "request", "rate/s", "requests", "achieved/s", "p50", "p99", "p99.9", "max", "errors", "handler p50", "handler p99", "engine", "loadgen", "others", "steal", "load average")
	// Warm up: connections open, code paths and the heap settle.
	if _, err := load(ctx, eng.addr, reqs, 1000, time.Second, o.conns); err != nil {
		return err
	}
	for _, rate := range o.rates {
		for range o.runs {
			if err := measureRate(ctx, eng, "evaluate", reqs, rate, o, out); err != nil {
				return err
			}
			if !o.floor {
				continue
			}
			if err := measureRate(ctx, eng, "healthz", probes, rate, o, out); err != nil {
				return err
			}
		}
	}
	rss, err := eng.rss()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "resident memory after the load: %s\n", mib(rss.rss))
	eng.stop()

	if o.rssRules > 0 {
		if err := measureMemory(ctx, o, docs, work, out); err != nil {
			return err
		}
	}
	if o.floodCalls == 0 {
		return nil
	}
	return measureFlood(ctx, o, b, work, out)
}

// measureRate runs one rate of reqs, named by request, and prints its row: what the
// generator saw, what the engine's evaluation histogram saw (nothing for a request
// that does not evaluate), the cores the engine, the generator and the rest of the
// machine used, and the load average after the run.
func measureRate(ctx context.Context, eng *engineProc, request string, reqs [][]byte, rate int, o options, out io.Writer) error {
	before, err := eng.latencies()
	if err != nil {
		return err
	}
	cpuBefore, err := sampleCPU(eng.cmd.Process.Pid)
	if err != nil {
		return err
	}
	began := time.Now()
	st, err := load(ctx, eng.addr, reqs, rate, o.duration, o.conns)
	if err != nil {
		return err
	}
	cpuAfter, err := sampleCPU(eng.cmd.Process.Pid)
	if err != nil {
		return err
	}
	cpu := cpuAfter.since(cpuBefore, time.Since(began))
	after, err := eng.latencies()
	if err != nil {
		return err
	}
	handlerP50, handlerP99 := "-", "-"
	if request == "evaluate" {
		handlerP50, handlerP99 = "≤"+round(after.quantile(before, 0.5)), "≤"+round(after.quantile(before, 0.99))
	}
	fmt.Fprintf(out, rowFormat, request, rate, st.requests, st.achieved,
		round(st.p50), round(st.p99), round(st.p999), round(st.max), st.errors, handlerP50, handlerP99,
		cpu.engine, cpu.self, cpu.others, cpu.steal, loadAverage())
	if st.firstError != "" {
		fmt.Fprintf(out, "         first error: %s\n", st.firstError)
	}
	return nil
}

// measureMemory starts a fresh engine on a bundle of o.rssRules rules, drives
// o.rssSessions distinct sessions through it, and reports its resident memory.
func measureMemory(ctx context.Context, o options, docs *benchDocs, work string, out io.Writer) error {
	b, err := docs.bundle(o.rssRules)
	if err != nil {
		return err
	}
	eng, err := startEngine(ctx, o.engine, work, b)
	if err != nil {
		return err
	}
	defer eng.stop()
	idle, err := eng.rss()
	if err != nil {
		return err
	}
	if err := driveSessions(ctx, eng.addr, docs, o.rssSessions, o.rssIDBytes, o.conns); err != nil {
		return err
	}
	held, err := eng.metric("oar_engine_sessions")
	if err != nil {
		return err
	}
	heap, err := eng.metric("go_memstats_heap_inuse_bytes")
	if err != nil {
		return err
	}
	mem, err := eng.rss()
	if err != nil {
		return err
	}
	// An engine from before --max-session-bytes exports no charge of its sessions.
	charged := ""
	if n, err := eng.metric("oar_engine_session_bytes"); err == nil {
		charged = fmt.Sprintf(", charged %s", mib(int64(n)/1024))
	}
	fmt.Fprintf(out, "memory: %d-rule bundle, %d sessions driven (ids of %d bytes at least), %.0f held%s: VmRSS %s (peak VmHWM %s, Go heap in use %s); with the bundle loaded and no session: %s\n",
		len(b.Packs[0].Rules), o.rssSessions, len(sessionName(0, o.rssIDBytes)), held, charged, mib(mem.rss), mib(mem.hwm), mib(int64(heap)/1024), mib(idle.rss))
	return nil
}

const (
	headFormat = "%-8s %8s %9s %10s %9s %9s %9s %9s %7s %12s %12s %7s %7s %7s %7s  %s\n"
	rowFormat  = "%-8s %8d %9d %10.1f %9s %9s %9s %9s %7d %12s %12s %7.2f %7.2f %7.2f %7.2f  %s\n"
)

func round(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	default:
		return d.Round(10 * time.Microsecond).String()
	}
}

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }
