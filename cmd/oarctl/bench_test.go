package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
)

func benchArgs(occurrences string, extra ...string) []string {
	args := []string{"bench",
		"--capability", "testdata/bench/capability.yaml",
		"--rules", "testdata/bench/rules.yaml",
		"--occurrences", occurrences,
	}
	return append(args, extra...)
}

func TestBenchJSON(t *testing.T) {
	stdout, stderr, code := oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", "200", "--json")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &members); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"evaluations", "seconds", "per_second", "p50_ns", "p99_ns", "allocs_per_eval", "cpu_ns_per_eval"} {
		if _, ok := members[k]; !ok {
			t.Errorf("member %q missing from %s", k, stdout)
		}
	}
	if len(members) != 7 {
		t.Errorf("want exactly seven members, got %s", stdout)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Evaluations != 200 {
		t.Errorf("evaluations %d, want 200", r.Evaluations)
	}
	if r.Seconds <= 0 || r.PerSecond <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.AllocsPerEval <= 0 {
		t.Errorf("implausible measurement %+v", r)
	}
	// Every evaluation is timed inside the measured loop, so the median cannot exceed
	// the mean the wall time gives.
	if mean := r.Seconds / float64(r.Evaluations) * float64(time.Second); float64(r.P50) > 2*mean {
		t.Errorf("p50 %d ns is far above the mean %.0f ns", r.P50, mean)
	}
}

func TestBenchText(t *testing.T) {
	stdout, stderr, code := oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", "50")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	line := regexp.MustCompile(`^50 evaluations in [0-9.e+-]+ s: [0-9]+ evals/s, p50 [0-9]+ ns, p99 [0-9]+ ns, [0-9]+\.[0-9] allocs/eval, [0-9]+ CPU ns/eval\n$`)
	if !line.MatchString(stdout) {
		t.Errorf("stdout %q does not match %s", stdout, line)
	}
}

// TestBenchByAnchor: --by-anchor splits the measured evaluations by the anchor of the
// occurrence each evaluated, in anchor order, in both outputs; without it the JSON keeps
// its seven members (TestBenchJSON).
func TestBenchByAnchor(t *testing.T) {
	lines := []string{
		`{"anchor": "tool.post_invoke", "session_id": "s1", "tool_call": {"name": "read", "arguments": {"path": "/workspace/.env"}}}`,
		`{"anchor": "tool.pre_invoke", "session_id": "s1", "tool_call": {"name": "read", "arguments": {"path": "/workspace/.env"}}}`,
		`{"anchor": "tool.pre_invoke", "session_id": "s2", "tool_call": {"name": "bash", "arguments": {"command": "ls"}}}`,
	}
	file := filepath.Join(t.TempDir(), "anchors.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// 200 evaluations cycle over the three lines: 67 at tool.post_invoke (line 1), 67 +
	// 66 at tool.pre_invoke (lines 2 and 3). An evaluation credited to the line after its
	// own would give tool.post_invoke 66.
	want := []anchorLatency{{Anchor: "tool.post_invoke", Evaluations: 67}, {Anchor: "tool.pre_invoke", Evaluations: 133}}

	stdout, stderr, code := oarctl(t, benchArgs(file, "-n", "200", "--by-anchor", "--json")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not the result: %v\n%s", err, stdout)
	}
	if len(r.Anchors) != len(want) {
		t.Fatalf("anchors %+v, want %d of them", r.Anchors, len(want))
	}
	var maxP99 int64
	for i, a := range r.Anchors {
		if a.Anchor != want[i].Anchor || a.Evaluations != want[i].Evaluations {
			t.Errorf("anchors[%d] = %s with %d evaluations, want %s with %d", i, a.Anchor, a.Evaluations, want[i].Anchor, want[i].Evaluations)
		}
		if a.P50 <= 0 || a.P99 < a.P50 {
			t.Errorf("implausible latencies for %s: p50 %d ns, p99 %d ns", a.Anchor, a.P50, a.P99)
		}
		maxP99 = max(maxP99, a.P99)
	}
	// Some anchor's p99 reaches the p99 of all: were every anchor's below it, fewer
	// than 1 % of all the evaluations could take that long.
	if maxP99 < r.P99 {
		t.Errorf("no anchor's p99 reaches the overall p99 %d ns: %+v", r.P99, r.Anchors)
	}

	stdout, stderr, code = oarctl(t, benchArgs(file, "-n", "200", "--by-anchor")...)
	text := regexp.MustCompile(`^200 evaluations in .*\n  tool\.post_invoke: 67 evaluations, p50 [0-9]+ ns, p99 [0-9]+ ns\n  tool\.pre_invoke: 133 evaluations, p50 [0-9]+ ns, p99 [0-9]+ ns\n$`)
	if code != exitOK || stderr != "" || !text.MatchString(stdout) {
		t.Errorf("exit code %d, stderr %q, stdout %q does not match %s", code, stderr, stdout, text)
	}
}

func TestBenchOccurrenceErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := `{"anchor": "tool.pre_invoke", "session_id": "s1", "tool_call": {"name": "read", "arguments": {"path": "/tmp/x"}}}`
	tests := []struct {
		name string
		file string
		want string
	}{
		{
			name: "a malformed line after a blank one",
			file: write("malformed.jsonl", good+"\n\n"+`{"anchor": "tool.pre_invoke", "facts": []}`+"\n"),
			want: "malformed.jsonl:3: facts: [OAR-CONF-18] facts must be an object mapping fact names to values; got array\n",
		},
		{
			name: "a line that is not JSON",
			file: write("notjson.jsonl", good+"\nanchor: tool.pre_invoke\n"),
			want: "notjson.jsonl:2: [OAR-CONF-18] an occurrence is one JSON object: invalid character 'a' looking for beginning of value\n",
		},
		{
			name: "no occurrence at all",
			file: write("empty.jsonl", "\n\n"),
			want: "empty.jsonl: no occurrence: the file holds one occurrence object per line\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := oarctl(t, benchArgs(tt.file, "-n", "10")...)
			if code != exitFail || stdout != "" {
				t.Errorf("exit code %d, stdout %q", code, stdout)
			}
			if want := filepath.Join(dir, tt.want); stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
		})
	}
}

// TestBenchWarnsOfAnUndeclaredAnchor: an occurrence at an anchor the capability does
// not declare is measured (it selects nothing, [OAR-SEL-7]) and named in a warning.
func TestBenchWarnsOfAnUndeclaredAnchor(t *testing.T) {
	file := filepath.Join(t.TempDir(), "anchor.jsonl")
	if err := os.WriteFile(file, []byte(`{"anchor": "model.output"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := oarctl(t, benchArgs(file, "-n", "10")...)
	want := file + `:1: warning: anchor: [OAR-SEL-7] anchor "model.output" is not declared by the capability (neither the local anchor of a supported core anchor nor a host-native anchor); no rule selects it` + "\n"
	if code != exitOK || stderr != want || !strings.Contains(stdout, "10 evaluations") {
		t.Errorf("exit code %d, stdout %q, stderr %q, want the measurement and %q", code, stdout, stderr, want)
	}
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{benchArgs("testdata/bench/occurrences.jsonl", "-n", "0"), "oarctl: -n must be at least 1; got 0"},
		{[]string{"bench", "--capability", "testdata/bench/capability.yaml", "--rules", "testdata/bench/rules.yaml"}, "oarctl: --occurrences FILE is required"},
		{[]string{"bench", "--rules", "testdata/bench/rules.yaml", "--occurrences", "x"}, "oarctl: --capability FILE is required"},
	}
	for _, tt := range tests {
		_, stderr, code := oarctl(t, tt.args...)
		if code != exitUsage || !strings.HasPrefix(stderr, tt.want+"\n") {
			t.Errorf("%q: exit code %d, stderr %q, want it to start with %q", tt.args, code, stderr, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	sorted := make([]time.Duration, 100)
	for i := range sorted {
		sorted[i] = time.Duration(i + 1)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.50, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := percentile(sorted, tt.q); got != tt.want {
			t.Errorf("percentile(1..100, %v) = %d, want %d", tt.q, got, tt.want)
		}
	}
	if got := percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("percentile of one sample = %d, want 7", got)
	}
}

func TestBenchShape(t *testing.T) {
	stdout, stderr, code := oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", "20", "--shape")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	shape := regexp.MustCompile(`^workload: 100 rules, [0-9]+ occurrences; per occurrence [0-9.]+ rules reached, [0-9.]+ fired; decisions ([a-z]+ [0-9.]+%(, )?)+\n20 evaluations in `)
	if !shape.MatchString(stdout) {
		t.Errorf("stdout %q does not match %s", stdout, shape)
	}
	if strings.Contains(stdout, " 0.0 rules reached") {
		t.Errorf("no rule reached: %q", stdout)
	}
	// With --json, standard output stays one JSON object, the shape one of its members.
	stdout, stderr, code = oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", "20", "--shape", "--json")...)
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); code != exitOK || err != nil || !strings.HasPrefix(res.Shape, "workload: 100 rules") {
		t.Errorf("exit %d, stderr %q: %v; shape %q", code, stderr, err, res.Shape)
	}
}

// countingEvents counts the events published to it.
type countingEvents struct{ n *int }

func (c countingEvents) Publish(engine.Event) error { *c.n++; return nil }

// TestMeasureRunsEachPassFromNoState: every pass over the recorded occurrences starts
// from no session state, so a rule that fires only on a session's first occurrence
// fires once per pass, as it does in the workload --shape describes; kept across
// passes, the session would have counted past the rule after the first.
func TestMeasureRunsEachPassFromNoState(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"rules.yaml": `oar: "1.0"
namespace: bench.passes
id: FIRST_CALL
kind: policy
anchor: tool.pre_invoke
requires: {profiles: [tool]}
when: fire_count < 1
effect: warn
on_fire: [increment_counter, publish_event]
`,
		"occurrences.jsonl": `{"anchor": "tool.pre_invoke", "session_id": "s1", "tool_call": {"name": "read", "arguments": {}}}` + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var diags strings.Builder
	l := &loader{w: &diags}
	pf := programFlags{capability: "testdata/bench/capability.yaml", rules: fileList{filepath.Join(dir, "rules.yaml")}}
	p := pf.load(l)
	occs := l.readOccurrences(filepath.Join(dir, "occurrences.jsonl"))
	if p == nil || l.failed || len(occs) != 1 {
		t.Fatalf("the test's documents do not load (%d occurrences):\n%s", len(occs), diags.String())
	}
	var events, runtimes int
	var kept []*int
	res := measure(p, occs, 5, measureOptions{}, func() *engine.Runtime {
		runtimes++
		// Allocations of a pass's runtime, which are not the evaluations'.
		for range 1000 {
			kept = append(kept, new(int))
		}
		rt := engine.NewMemoryRuntime()
		rt.Events = countingEvents{&events}
		return rt
	})
	// The warmup's runtime and one per measured pass; the rule fires on the warmup's
	// first evaluation and on each pass's only one.
	if runtimes != 6 || events != 6 {
		t.Errorf("%d runtimes and %d events, want 6 and 6 (one runtime for the warmup and one per pass of the one occurrence, each firing once)", runtimes, events)
	}
	if res.AllocsPerEval > 100 {
		t.Errorf("%.1f allocations per evaluation: the 1,000 of each pass's runtime are counted as the evaluation's", res.AllocsPerEval)
	}
}

// TestMeasureCollectsBetweenPassesOnly: with collectBetweenPasses, exactly one
// collection runs between two passes, however much garbage a pass leaves, and the
// collector is as it was afterwards. Each pass's runtime leaves 32 MiB of garbage,
// which would start collections of its own were the collector on during the passes.
func TestMeasureCollectsBetweenPassesOnly(t *testing.T) {
	var diags strings.Builder
	l := &loader{w: &diags}
	pf := programFlags{capability: "testdata/bench/capability.yaml", rules: fileList{"testdata/bench/rules.yaml"}}
	p := pf.load(l)
	occs := l.readOccurrences("testdata/bench/occurrences.jsonl")
	if p == nil || l.failed {
		t.Fatalf("the bench documents do not load:\n%s", diags.String())
	}
	gcPercent := debug.SetGCPercent(-1)
	debug.SetGCPercent(gcPercent)
	memoryLimit := debug.SetMemoryLimit(-1)

	cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	var seen []uint64
	const passes = 5
	res := measure(p, occs, passes*len(occs), measureOptions{collectBetweenPasses: true}, func() *engine.Runtime {
		metrics.Read(cycles)
		seen = append(seen, cycles[0].Value.Uint64())
		garbage = make([]byte, 32<<20)
		garbage = nil
		return benchRuntime()
	})
	if !res.CollectedBetweenPasses {
		t.Error("the result does not say the collector ran between passes")
	}
	// seen[0] is the warmup's runtime, seen[1] the first pass's.
	if len(seen) != passes+1 {
		t.Fatalf("%d runtimes, want %d (the warmup's and one per pass)", len(seen), passes+1)
	}
	for i := 2; i < len(seen); i++ {
		if n := seen[i] - seen[i-1]; n != 1 {
			t.Errorf("%d collections from pass %d's start to pass %d's, want 1 (the one between them)", n, i-2, i-1)
		}
	}
	if got := debug.SetGCPercent(gcPercent); got != gcPercent {
		t.Errorf("the collector was left at GOGC %d, want %d as before", got, gcPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != memoryLimit {
		t.Errorf("the collector was left with a memory limit of %d, want %d as before", got, memoryLimit)
	}
}

// garbage is what TestMeasureCollectsBetweenPassesOnly allocates and drops.
var garbage []byte

// TestFastestByOccurrence: each occurrence's fastest evaluation counts once, whichever
// pass it came in, and the last, partial pass counts for the occurrences it reached.
func TestFastestByOccurrence(t *testing.T) {
	ns := func(ds ...int) []time.Duration {
		out := make([]time.Duration, len(ds))
		for i, d := range ds {
			out[i] = time.Duration(d)
		}
		return out
	}
	// Occurrences 0, 1, 2: fastest 5 (second pass), 20 (first), 1 (second); the third
	// pass reaches occurrence 0 only, at 7.
	got := fastestByOccurrence(3, ns(10, 20, 30, 5, 25, 1, 7))
	if want := (bestLatency{Passes: 2, P50: 5, P99: 20}); *got != want {
		t.Errorf("got %+v, want %+v", *got, want)
	}
	got = fastestByOccurrence(2, ns(9, 8, 3, 9, 9, 2))
	if want := (bestLatency{Passes: 3, P50: 2, P99: 3}); *got != want {
		t.Errorf("got %+v, want %+v", *got, want)
	}
}

// TestBenchBest: --best reports the fastest evaluations in both outputs, and refuses an
// -n that leaves an occurrence evaluated once.
func TestBenchBest(t *testing.T) {
	data, err := os.ReadFile("testdata/bench/occurrences.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	occs := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) != "" {
			occs++
		}
	}
	n := fmt.Sprint(2*occs + 1)

	stdout, stderr, code := oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", n, "--best", "--json")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not the result: %v\n%s", err, stdout)
	}
	if b := r.Best; b == nil || b.Passes != 2 || b.P50 <= 0 || b.P99 < b.P50 || b.P50 > r.P99 {
		t.Errorf("best %+v of %s", b, stdout)
	}

	stdout, stderr, code = oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", n, "--best")...)
	line := regexp.MustCompile(`\n  each occurrence's fastest of 2 or more evaluations: p50 [0-9]+ ns, p99 [0-9]+ ns\n$`)
	if code != exitOK || stderr != "" || !line.MatchString(stdout) {
		t.Errorf("exit code %d, stderr %q, stdout %q does not match %s", code, stderr, stdout, line)
	}

	stdout, stderr, code = oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", n, "--collect-between-passes")...)
	collected := regexp.MustCompile(`^[0-9]+ evaluations in [0-9.e+-]+ s \(the collector run between passes only, in no latency\): `)
	if code != exitOK || stderr != "" || !collected.MatchString(stdout) {
		t.Errorf("exit code %d, stderr %q, stdout %q does not match %s", code, stderr, stdout, collected)
	}

	_, stderr, code = oarctl(t, benchArgs("testdata/bench/occurrences.jsonl", "-n", fmt.Sprint(2*occs-1), "--best")...)
	if code != exitUsage || !strings.Contains(stderr, fmt.Sprintf("-n must be at least %d", 2*occs)) {
		t.Errorf("exit code %d, stderr %q: want a usage error naming the least -n", code, stderr)
	}
}
