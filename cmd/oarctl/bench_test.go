package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
			want: "notjson.jsonl:2: an occurrence is one JSON object: invalid character 'a' looking for beginning of value\n",
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
}
