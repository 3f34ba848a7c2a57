package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"github.com/oar-operator/oar-operator/internal/cputime"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

const benchSynopsis = "oarctl bench --capability FILE --rules FILE [--rules FILE]... [--config FILE]... --occurrences FILE [-n N] [--json] [--shape] [--by-anchor] [--best] [--collect-between-passes]"

// warmup is the most evaluations run, unmeasured, before measuring.
const warmup = 1000

// benchResult is what bench measures; it is also the --json output.
type benchResult struct {
	Evaluations   int     `json:"evaluations"`
	Seconds       float64 `json:"seconds"`
	PerSecond     float64 `json:"per_second"`
	P50           int64   `json:"p50_ns"`
	P99           int64   `json:"p99_ns"`
	AllocsPerEval float64 `json:"allocs_per_eval"`
	// CPUPerEval is the process CPU time of the measured loop per evaluation, the
	// garbage collector's included; 0 where it is not measured.
	CPUPerEval int64 `json:"cpu_ns_per_eval"`
	// Anchors are the same latencies split by the occurrences' anchor, in anchor order;
	// only with --by-anchor.
	Anchors []anchorLatency `json:"anchors,omitempty"`
	// Best is the latencies of each occurrence's fastest evaluation; only with --best.
	Best *bestLatency `json:"best,omitempty"`
	// Shape is the workload's description (--shape), which the text output prints
	// first.
	Shape string `json:"shape,omitempty"`
	// CollectedBetweenPasses says the garbage collector ran between passes, timed in
	// Seconds and CPUPerEval but in no latency, and never during one
	// (--collect-between-passes).
	CollectedBetweenPasses bool `json:"collected_between_passes,omitempty"`
}

// bestLatency is p50 and p99 over the occurrences of each one's fastest measured
// evaluation, of at least Passes. A stall of the machine (an interrupt, a neighbour's
// work) that lengthens one evaluation rarely lengthens every evaluation of the same
// occurrence, so these are the workload's latencies with such stalls left out, as far
// as its passes allow: what the engine costs, to compare across machines and runs,
// where P99 also measures the machine.
type bestLatency struct {
	Passes int   `json:"passes"`
	P50    int64 `json:"p50_ns"`
	P99    int64 `json:"p99_ns"`
}

// measureOptions are what measure reports beyond its figures for all evaluations.
type measureOptions struct {
	byAnchor, best bool
	// collectBetweenPasses runs the collector between passes and turns it off during
	// them, so no pass holds a collection or what follows one: on the generated
	// workload, the heap growing into pages it has not touched, whose faults are most
	// of the measured p99. The throughput and CPU time still include the collections.
	collectBetweenPasses bool
}

// anchorLatency is the measured evaluations of the occurrences at one anchor.
type anchorLatency struct {
	Anchor      string `json:"anchor"`
	Evaluations int    `json:"evaluations"`
	P50         int64  `json:"p50_ns"`
	P99         int64  `json:"p99_ns"`
}

// recorded is one occurrence of the --occurrences file and the line it came from.
type recorded struct {
	at  origin
	occ *engine.Occurrence
}

// runBench evaluates the recorded occurrences in order, cycling until n evaluations,
// each pass over them against a fresh runtime of the sidecar's (benchRuntime) — so every
// pass is the recorded workload, its sessions starting from no state, as --shape
// describes it — each into one reused decision buffer, as the engine sidecar does, and
// reports throughput, latency percentiles and allocations per evaluation.
func runBench(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("bench", stderr)
	var pf programFlags
	pf.register(flags)
	occFile := flags.String("occurrences", "", "a JSON Lines `FILE`, one occurrence object per line (required)")
	n := flags.Int("n", 100000, "the number `N` of measured evaluations")
	asJSON := flags.Bool("json", false, "print the result as one JSON object")
	shape := flags.Bool("shape", false, "first print, per occurrence on average, how many rules each occurrence reached (selected and evaluated or suppressed) and how many fired, and the decisions (with --json, as the member shape)")
	byAnchor := flags.Bool("by-anchor", false, "also report the evaluations, p50 and p99 of each anchor's occurrences, to see which anchor a p50 or p99 comes from")
	best := flags.Bool("best", false, "also report p50 and p99 over the occurrences of each one's fastest evaluation, leaving out the machine's stalls; -n must be at least twice the occurrences")
	collect := flags.Bool("collect-between-passes", false, "run the garbage collector between passes over the occurrences and never during one: p50 and p99 then leave out what collections cost the evaluations (evals/s and CPU time still pay for the collections)")
	rest, code, ok := parseFlags(flags, benchSynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	switch msg := pf.missing(); {
	case len(rest) > 0:
		return usageError(stderr, benchSynopsis, "unexpected argument %q", rest[0])
	case msg != "":
		return usageError(stderr, benchSynopsis, "%s", msg)
	case *occFile == "":
		return usageError(stderr, benchSynopsis, "--occurrences FILE is required")
	case *n < 1:
		return usageError(stderr, benchSynopsis, "-n must be at least 1; got %d", *n)
	}

	l := &loader{w: stderr}
	p := pf.load(l)
	occs := l.readOccurrences(*occFile)
	if p == nil || l.failed {
		return exitFail
	}
	if *best && *n < 2*len(occs) {
		return usageError(stderr, benchSynopsis, "--best needs every occurrence evaluated at least twice: -n must be at least %d (twice the %d occurrences); got %d", 2*len(occs), len(occs), *n)
	}
	for _, r := range occs {
		if !p.Capability().DeclaresAnchor(r.occ.Anchor) {
			l.warn(r.at, undeclaredAnchor(r.occ.Anchor, p.Capability()))
		}
	}
	var described string
	if *shape {
		described = workloadShape(p, occs)
		if !*asJSON {
			fmt.Fprintln(stdout, described)
		}
	}
	res := measure(p, occs, *n, measureOptions{byAnchor: *byAnchor, best: *best, collectBetweenPasses: *collect}, benchRuntime)
	res.Shape = described
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			fmt.Fprintf(stderr, "oarctl bench: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	collected := ""
	if res.CollectedBetweenPasses {
		collected = " (the collector run between passes only, in no latency)"
	}
	fmt.Fprintf(stdout, "%d evaluations in %.3g s%s: %.0f evals/s, p50 %d ns, p99 %d ns, %.1f allocs/eval, %d CPU ns/eval\n",
		res.Evaluations, res.Seconds, collected, res.PerSecond, res.P50, res.P99, res.AllocsPerEval, res.CPUPerEval)
	for _, a := range res.Anchors {
		fmt.Fprintf(stdout, "  %s: %d evaluations, p50 %d ns, p99 %d ns\n", a.Anchor, a.Evaluations, a.P50, a.P99)
	}
	if b := res.Best; b != nil {
		fmt.Fprintf(stdout, "  each occurrence's fastest of %d or more evaluations: p50 %d ns, p99 %d ns\n", b.Passes, b.P50, b.P99)
	}
	return exitOK
}

// readOccurrences reads a JSON Lines file of occurrences, skipping blank lines and
// reporting a malformed line as FILE:LINE.
func (l *loader) readOccurrences(file string) []recorded {
	data, err := os.ReadFile(file)
	if err != nil {
		l.errorf(file, "%v", unwrapPathError(err))
		return nil
	}
	var out []recorded
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		at := origin{file: fmt.Sprintf("%s:%d", file, i+1)}
		occ, errs := decodeOccurrence(line)
		for _, e := range errs {
			l.report(at, e)
		}
		if occ != nil {
			out = append(out, recorded{at: at, occ: occ})
		}
	}
	if len(out) == 0 && !l.failed {
		l.errorf(file, "no occurrence: the file holds one occurrence object per line")
	}
	return out
}

// measure runs min(warmup, n) unmeasured evaluations, then n measured ones, timing each
// and counting heap allocations over the whole measured loop; once the loop is over,
// o.byAnchor splits the latencies by anchor too, and o.best reports each occurrence's
// fastest; o.collectBetweenPasses moves the collector's work out of the passes.
// newRuntime gives the runtime of the warmup and of each measured pass over occs: were
// one runtime kept across passes, the recorded sessions would go on counting, and
// rules whose conditions read fire_count would stop firing after the first pass,
// measuring a workload the recording is not.
// Each pass's runtime is made as the pass begins and dropped when the next begins, so
// memory stays that of one pass however many there are; making it is neither timed nor
// counted in the allocations, while the session state a pass builds is, as a sidecar
// allocates its new sessions' state.
func measure(p *engine.Program, occs []recorded, n int, o measureOptions, newRuntime func() *engine.Runtime) benchResult {
	buf := &engine.DecisionBuffer{}
	rt := newRuntime()
	for i := range min(warmup, n) {
		evaluatePinned(p, rt, occs[i%len(occs)].occ, buf)
	}
	latencies := make([]time.Duration, n)
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	allocated := func() uint64 {
		metrics.Read(allocs)
		return allocs[0].Value.Uint64()
	}
	var (
		setup     uint64
		setupTime time.Duration
	)
	if o.collectBetweenPasses {
		// Neither the heap's growth nor a GOMEMLIMIT starts a collection; the heap
		// grows by at most what one pass allocates.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	}
	runtime.GC()
	before := allocated()
	cpu0, cpuOK := cputime.Process()
	start := time.Now()
	for i := range n {
		occ := occs[i%len(occs)].occ
		if i%len(occs) == 0 {
			if o.collectBetweenPasses && i > 0 {
				// Timed as a part of the loop, not of any evaluation: the throughput
				// and CPU time still pay for the collections.
				runtime.GC()
			}
			t := time.Now()
			a := allocated()
			rt = newRuntime()
			setup += allocated() - a
			setupTime += time.Since(t)
		}
		latencies[i] = evaluatePinned(p, rt, occ, buf)
	}
	wall := time.Since(start) - setupTime
	cpu1, _ := cputime.Process()
	after := allocated()
	var cpuPerEval int64
	if cpuOK {
		cpuPerEval = (cpu1 - cpu0 - setupTime).Nanoseconds() / int64(n)
	}

	var anchors []anchorLatency
	if o.byAnchor {
		anchors = splitByAnchor(occs, latencies)
	}
	var best *bestLatency
	if o.best && n >= 2*len(occs) {
		best = fastestByOccurrence(len(occs), latencies)
	}
	slices.Sort(latencies)
	return benchResult{
		Evaluations:   n,
		Seconds:       wall.Seconds(),
		PerSecond:     float64(n) / wall.Seconds(),
		P50:           percentile(latencies, 0.50).Nanoseconds(),
		P99:           percentile(latencies, 0.99).Nanoseconds(),
		AllocsPerEval: float64(after-before-setup) / float64(n),
		CPUPerEval:    cpuPerEval,
		Anchors:       anchors,
		Best:          best,

		CollectedBetweenPasses: o.collectBetweenPasses,
	}
}

// fastestByOccurrence is the p50 and p99 of the fastest of each occurrence's latencies in
// measure's loop, whose evaluation i was of occurrence i modulo occs; every occurrence
// was evaluated at least twice.
func fastestByOccurrence(occs int, latencies []time.Duration) *bestLatency {
	fastest := slices.Clone(latencies[:occs])
	for i, d := range latencies[occs:] {
		fastest[i%occs] = min(fastest[i%occs], d)
	}
	slices.Sort(fastest)
	return &bestLatency{Passes: len(latencies) / occs,
		P50: percentile(fastest, 0.50).Nanoseconds(), P99: percentile(fastest, 0.99).Nanoseconds()}
}

// splitByAnchor groups the latencies of measure's loop, whose evaluation i was of
// occurrence i modulo len(occs), by the occurrence's anchor.
func splitByAnchor(occs []recorded, latencies []time.Duration) []anchorLatency {
	byAnchor := map[string][]time.Duration{}
	for i, d := range latencies {
		a := occs[i%len(occs)].occ.Anchor
		byAnchor[a] = append(byAnchor[a], d)
	}
	out := make([]anchorLatency, 0, len(byAnchor))
	for _, a := range slices.Sorted(maps.Keys(byAnchor)) {
		ds := byAnchor[a]
		slices.Sort(ds)
		out = append(out, anchorLatency{Anchor: a, Evaluations: len(ds),
			P50: percentile(ds, 0.50).Nanoseconds(), P99: percentile(ds, 0.99).Nanoseconds()})
	}
	return out
}

// pinner is a session store that pins a session while it is evaluated, as the
// sidecar's does (session.Store).
type pinner interface {
	Pin(session string) bool
	Unpin(session string)
}

// evaluatePinned evaluates occ into buf and returns how long that took. Its session is
// pinned in rt's session store meanwhile, when the store pins, as the sidecar does; the
// pinning is not timed.
func evaluatePinned(p *engine.Program, rt *engine.Runtime, occ *engine.Occurrence, buf *engine.DecisionBuffer) time.Duration {
	if st, ok := rt.Counters.(pinner); ok {
		st.Pin(occ.SessionID)
		defer st.Unpin(occ.SessionID)
	}
	t0 := time.Now()
	p.EvaluateInto(rt, occ, buf)
	return time.Since(t0)
}

// discardEvents is the measured runtime's event stream: it keeps no record. The
// in-memory EventLog keeps every record, so over a long run the collector would scan an
// ever longer list that no host keeps; writing the records out is the host's cost (the
// sidecar's stream), not the engine's.
type discardEvents struct{}

func (discardEvents) Publish(engine.Event) error { return nil }

// benchRuntime is the runtime of the engine sidecar in memory mode, its events going
// nowhere: its session store keeps the counters and activity windows, and each
// evaluation pins its session (measure), as the sidecar does.
func benchRuntime() *engine.Runtime {
	sessions := session.New(session.Options{})
	return &engine.Runtime{Counters: sessions, Activity: sessions, Events: discardEvents{}, Detectors: engine.ReservedDetectors()}
}

// percentile is the nearest-rank percentile of sorted latencies.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// workloadShape evaluates every recorded occurrence once, in order, against a fresh
// runtime and describes what the workload exercises: the mean number of trace entries
// (rules selected and reached before any block stopped evaluation) and of fired rules
// per occurrence, and how often each decision came out.
func workloadShape(p *engine.Program, occs []recorded) string {
	rt := engine.NewMemoryRuntime()
	var reached, fired int
	decisions := map[string]int{}
	for _, o := range occs {
		d := p.Evaluate(rt, o.occ)
		reached += len(d.Applied)
		for _, a := range d.Applied {
			if strings.HasSuffix(a, ":fired") {
				fired++
			}
		}
		decisions[d.Decision]++
	}
	n := float64(len(occs))
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(decisions)) {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", k, 100*float64(decisions[k])/n))
	}
	return fmt.Sprintf("workload: %d rules, %d occurrences; per occurrence %.1f rules reached, %.2f fired; decisions %s",
		len(p.RuleSet().Rules), len(occs), float64(reached)/n, float64(fired)/n, strings.Join(parts, ", "))
}
