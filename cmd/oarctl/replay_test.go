package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/replay"
	"github.com/oar-operator/oar-operator/internal/sidecar/standalone"
)

// The replay fixtures: the sample documents, the same pack with SHELL_AFTER_FETCH
// blocking instead of nudging, and a decision log an oar-engine serving the samples
// wrote (--decision-log, content omitted) while answering 240 occurrences of 12 agent
// sessions.
const (
	sampleCap    = "../../config/samples/oar/capability.yaml"
	sampleRules  = "../../config/samples/oar/rules.yaml"
	sampleConfig = "../../config/samples/oar/config.yaml"
	shellBlocks  = "testdata/replay/rules-shell-blocks.yaml"
	sampleLog    = "testdata/replay/decisions.jsonl"
	// unknownLog is a session of a sidecar sharing its store, written by hand: a web
	// fetch, a shell call nudged (line 2), a web fetch whose commit's outcome the
	// sidecar did not know (line 3, session_outcome_unknown), and a shell call nudged
	// that read a version whose writer is in no log given (line 4), so no line settles
	// line 3.
	unknownLog = "testdata/replay/outcome-unknown.jsonl"
)

func replayArgs(extra ...string) []string {
	return append([]string{"replay", "--capability", sampleCap, "--rules", sampleRules, "--config", sampleConfig,
		"--against", shellBlocks, "--against-config", sampleConfig, "--log", sampleLog}, extra...)
}

// TestReplayTable: the change shows in the tables (30 nudges become blocks, all
// SHELL_AFTER_FETCH, all shell calls), the changes are listed up to --max-changes,
// and the before side reproduces every logged decision while saying which
// occurrences it replayed without their content.
func TestReplayTable(t *testing.T) {
	stdout, stderr, code := oarctl(t, replayArgs("--max-changes", "3")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	containsInOrder(t, lines(stdout), []string{
		"replayed 240 occurrences in 12 sessions from " + sampleLog,
		"  240 logged by bundle sha256:",
		"  before: rules from files, not a bundle the log names",
		"  after:  rules from files, not a bundle the log names",
		"decision   before  after",
		"none       138     138",
		"warn       0       0",
		"nudge      30      0",
		"transform  54      54",
		"block      18      48",
		"changed            30",
		"changed by rule                  occurrences",
		"acme.security/SHELL_AFTER_FETCH  30",
		"changed by tool  occurrences",
		"shell            30",
		"changes (3 of 30):",
		"line  session   anchor           tool   before → after",
		"32    agent-08  tool.pre_invoke  shell  nudge (acme.security/SHELL_AFTER_FETCH) → block (acme.security/SHELL_AFTER_FETCH)  acme.security/SHELL_AFTER_FETCH",
		"... and 27 more (--max-changes)",
		"the before side against the log: 240 of 240 decisions reproduced, 0 not",
		"cannot reproduce 54 occurrences exactly: content not logged (omit mode): replayed with a placeholder of its length",
	})
}

// TestReplayJSON is the --json shape CI reads.
func TestReplayJSON(t *testing.T) {
	stdout, stderr, code := oarctl(t, replayArgs("--json", "--max-changes", "2")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	type count struct {
		Name  string
		Count int
	}
	var rep struct {
		Occurrences, Sessions, Changed, Reproduced, Mismatched int
		ChangesNotListed                                       int `json:"changes_not_listed"`
		Before, After                                          []count
		ByRule                                                 []count `json:"by_rule"`
		ByTool                                                 []count `json:"by_tool"`
		Changes                                                []struct {
			Line          int
			Session       string `json:"session_id"`
			Tool          string
			Before, After struct{ Decision, Rule string }
			Rules         []string
			Differs       []string
		}
		Unreproducible []struct {
			Reason string
			Count  int
			Lines  []struct{ Line int }
		}
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	for _, key := range []string{`"by_rule"`, `"by_tool"`, `"confirmed": 30`, `"unconfirmed": 0`, `"unconfirmed_by_rule": []`, `"unconfirmed_by_tool": []`, `"changes_not_listed"`, `"mismatches"`, `"unreproducible"`} {
		if !strings.Contains(stdout, key) {
			t.Errorf("no %s member", key)
		}
	}
	if rep.Occurrences != 240 || rep.Sessions != 12 || rep.Changed != 30 || rep.Reproduced != 240 || rep.Mismatched != 0 || rep.ChangesNotListed != 28 {
		t.Errorf("report %+v", rep)
	}
	if len(rep.ByRule) != 1 || rep.ByRule[0].Name != "acme.security/SHELL_AFTER_FETCH" || rep.ByRule[0].Count != 30 || len(rep.ByTool) != 1 || rep.ByTool[0].Name != "shell" {
		t.Errorf("by rule %+v, by tool %+v", rep.ByRule, rep.ByTool)
	}
	if len(rep.Changes) != 2 || rep.Changes[0].Session != "agent-08" || rep.Changes[0].Before.Decision != "nudge" || rep.Changes[0].After.Decision != "block" || rep.Changes[0].Tool != "shell" ||
		strings.Join(rep.Changes[0].Rules, ",") != "acme.security/SHELL_AFTER_FETCH" || strings.Join(rep.Changes[0].Differs, ",") != "decision,advisories" {
		t.Errorf("changes %+v", rep.Changes)
	}
	if len(rep.Unreproducible) != 1 || rep.Unreproducible[0].Count != 54 || len(rep.Unreproducible[0].Lines) != 2 {
		t.Errorf("unreproducible %+v", rep.Unreproducible)
	}
}

// TestReplayFailOnChange: --fail-on-change exits 1 when a decision changed, 0 when
// none did.
func TestReplayFailOnChange(t *testing.T) {
	if _, _, code := oarctl(t, replayArgs("--fail-on-change")...); code != exitFail {
		t.Errorf("a change with --fail-on-change: exit %d, want 1", code)
	}
	same := []string{"replay", "--capability", sampleCap, "--rules", sampleRules, "--config", sampleConfig,
		"--against", sampleRules, "--against-config", sampleConfig, "--log", sampleLog, "--fail-on-change", "--fail-on-mismatch"}
	stdout, stderr, code := oarctl(t, same...)
	if code != exitOK || !strings.Contains(stdout, "changed            0") {
		t.Errorf("no change: exit %d, %s%s", code, stdout, stderr)
	}
}

// TestReplayFailOnUnconfirmedChange: a change the log cannot confirm may still be the
// rule change's, so --fail-on-change fails on it as on a confirmed one.
func TestReplayFailOnUnconfirmedChange(t *testing.T) {
	for _, tc := range []struct {
		rep                  replay.Report
		onChange, onMismatch bool
		want                 bool
	}{
		{replay.Report{Changed: 1, Unconfirmed: 1}, true, false, true},
		{replay.Report{Changed: 1, Confirmed: 1}, true, false, true},
		{replay.Report{Changed: 2, Confirmed: 1, Unconfirmed: 1}, false, true, false},
		{replay.Report{Mismatched: 1}, false, true, true},
		{replay.Report{}, true, true, false},
	} {
		if got := failing(&tc.rep, tc.onChange, tc.onMismatch); got != tc.want {
			t.Errorf("%d changed, %d unconfirmed, %d mismatched, --fail-on-change %v, --fail-on-mismatch %v: failing %v, want %v",
				tc.rep.Changed, tc.rep.Unconfirmed, tc.rep.Mismatched, tc.onChange, tc.onMismatch, got, tc.want)
		}
	}
}

// TestReplayMismatches: replaying a log under other rules than those that wrote it
// names each occurrence not reproduced and why, and --fail-on-mismatch fails. Rules
// from files have no digest the log knows, so the reason is the rules themselves.
func TestReplayMismatches(t *testing.T) {
	args := []string{"replay", "--capability", sampleCap, "--rules", shellBlocks, "--config", sampleConfig,
		"--against", shellBlocks, "--against-config", sampleConfig, "--log", sampleLog, "--max-changes", "2"}
	stdout, _, code := oarctl(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	containsInOrder(t, lines(stdout), []string{
		"the before side against the log: 210 of 240 decisions reproduced, 30 not",
		"line  session   anchor           tool   logged → replayed",
		"32    agent-08  tool.pre_invoke  shell  nudge (acme.security/SHELL_AFTER_FETCH) → block (acme.security/SHELL_AFTER_FETCH)  the before rules decide otherwise",
		"... and 28 more",
	})
	if _, _, code := oarctl(t, append(args, "--fail-on-mismatch")...); code != exitFail {
		t.Errorf("--fail-on-mismatch: exit %d, want 1", code)
	}
}

// TestReplayBundle: --bundle reads the bundle a sidecar serves, here the one a
// standalone oar-engine made of the samples, as a ConfigMap manifest and as its
// bundle.json, and reproduces the log it wrote.
func TestReplayBundle(t *testing.T) {
	b, err := (standalone.Files{Capability: sampleCap, Rules: []string{sampleRules}, Configs: []string{sampleConfig}}).Read()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := bundle.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "gateway-oar-bundle"}}
	if enc.Compressed {
		manifest["binaryData"] = map[string]string{bundle.KeyGzip: base64.StdEncoding.EncodeToString(enc.BinaryData[bundle.KeyGzip])}
	} else {
		manifest["data"] = enc.Data
	}
	cm, _ := json.Marshal(manifest)
	files := map[string][]byte{"configmap.json": cm, "bundle.json": []byte(enc.Data[bundle.KeyPlain])}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := oarctl(t, "replay", "--bundle", path, "--against-bundle", path, "--log", sampleLog, "--fail-on-mismatch")
		if code != exitOK || !strings.Contains(stdout, "240 of 240 decisions reproduced, 0 not") || !strings.Contains(stdout, "before: bundle "+b.Digest) {
			t.Errorf("%s: exit %d\n%s%s", name, code, stdout, stderr)
		}
	}
}

// TestReplayBadInput: a malformed log line is named FILE:LINE and fails; a command
// line missing a side or the log is a usage error.
func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	data, err := os.ReadFile(sampleLog)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	if err := os.WriteFile(bad, []byte(first+"\n{\"kind\":\"decision\"}\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := oarctl(t, "replay", "--capability", sampleCap, "--rules", sampleRules, "--against", sampleRules, "--log", bad)
	if code != exitFail || !strings.Contains(stderr, bad+":2: a decision line: missing member \"occurrence\"") || !strings.Contains(stderr, bad+":3: not a JSON object") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	// A log given twice, under any name, would replay its occurrences twice.
	link := filepath.Join(dir, "same.jsonl")
	abs, err := filepath.Abs(sampleLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, link); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = oarctl(t, "replay", "--capability", sampleCap, "--rules", sampleRules, "--against", sampleRules, "--log", sampleLog, "--log", link)
	if code != exitFail || !strings.Contains(stderr, link+": the same file as "+sampleLog+", given twice") {
		t.Errorf("a log given twice: exit %d, stderr %s", code, stderr)
	}
	for _, args := range [][]string{
		{"replay", "--capability", sampleCap, "--rules", sampleRules, "--against", sampleRules},
		{"replay", "--capability", sampleCap, "--rules", sampleRules, "--log", sampleLog},
		{"replay", "--rules", sampleRules, "--against", sampleRules, "--log", sampleLog},
		{"replay", "--bundle", "x", "--rules", sampleRules, "--capability", sampleCap, "--against", sampleRules, "--log", sampleLog},
	} {
		if _, stderr, code := oarctl(t, args...); code != exitUsage || !strings.Contains(stderr, "Usage: oarctl replay") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}

// TestReplayTransformChange: another replacement text for the sample pack's email
// redaction changes no effect and no deciding rule, yet changes what the host
// delivers: each redacted output is a change, named with the parts that differ, and
// --fail-on-change fails.
func TestReplayTransformChange(t *testing.T) {
	data, err := os.ReadFile(sampleRules)
	if err != nil {
		t.Fatal(err)
	}
	const redact = "transform: {action: redact, target: acme.gateway.email_spans}"
	changed := strings.Replace(string(data), redact, `transform: {action: redact, target: acme.gateway.email_spans, replacement: "[hidden]"}`, 1)
	if changed == string(data) {
		t.Fatal("the sample pack has no email redaction to change")
	}
	after := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(after, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := oarctl(t, "replay", "--capability", sampleCap, "--rules", sampleRules, "--config", sampleConfig,
		"--against", after, "--against-config", sampleConfig, "--log", sampleLog, "--max-changes", "1", "--fail-on-change")
	if code != exitFail {
		t.Errorf("exit %d, want 1: %s%s", code, stdout, stderr)
	}
	containsInOrder(t, lines(stdout), []string{
		"transform  54      54",
		"changed            54",
		"acme.privacy/REDACT_EMAILS  54",
		"changes (1 of 54):",
		"5     agent-08  content.output  -     transform (acme.privacy/REDACT_EMAILS) → transform (acme.privacy/REDACT_EMAILS) (content not logged)  acme.privacy/REDACT_EMAILS  transforms, content",
	})
}

// TestReplayTableMarksUnconfirmedChanges: a change replayed against a session whose
// state is unknown since an earlier line (a commit whose outcome the sidecar did not
// know) says so where it is listed, and the totals say how many of the changes the log
// confirms and how many it cannot: rows under changed, columns by rule and by tool.
func TestReplayTableMarksUnconfirmedChanges(t *testing.T) {
	var out strings.Builder
	const limit, count = "acme.ops/SHELL_LIMIT", "acme.ops/COUNT_SHELL"
	rep := &replay.Report{Before: []replay.Count{{Name: "block", Count: 1}}, After: []replay.Count{{Name: "block", Count: 3}},
		Changed: 3, ByRule: []replay.Count{{Name: limit, Count: 2}, {Name: count, Count: 1}}, ByTool: []replay.Count{{Name: "shell", Count: 3}},
		Confirmed: 1, Unconfirmed: 2, UnconfirmedByRule: []replay.Count{{Name: count, Count: 1}, {Name: limit, Count: 1}}, UnconfirmedByTool: []replay.Count{{Name: "shell", Count: 2}},
		Changes: []replay.Change{{Line: 9, Session: "s", Anchor: "tool.pre_invoke", Tool: "shell",
			Before: replay.Outcome{Decision: "warn"}, After: replay.Outcome{Decision: "block"}, UncertainSince: &replay.Place{Line: 7}}},
		ChangesNotListed: 2}
	if err := writeReport(&out, rep, []string{"decisions.jsonl"}); err != nil {
		t.Fatal(err)
	}
	containsInOrder(t, lines(out.String()), []string{
		"block          1       3",
		"changed                3",
		"  confirmed            1",
		"  unconfirmed          2",
		"changed by rule       occurrences  confirmed  unconfirmed",
		"acme.ops/SHELL_LIMIT  2            1          1",
		"acme.ops/COUNT_SHELL  1            0          1",
		"changed by tool  occurrences  confirmed  unconfirmed",
		"shell            3            1          2",
		"changes (1 of 3, 2 unconfirmed):",
		"9     s        tool.pre_invoke  shell  warn → block (unconfirmed: the session's state is unknown since line 7)",
		"... and 2 more (--max-changes)",
	})
}

// TestReplayTableByToolWithoutRules: a change may have no responsible rule, and its
// tool is still counted: the table by tool is printed without one by rule.
func TestReplayTableByToolWithoutRules(t *testing.T) {
	var out strings.Builder
	rep := &replay.Report{Changed: 1, Confirmed: 1, ByRule: []replay.Count{}, ByTool: []replay.Count{{Name: "shell", Count: 1}}}
	if err := writeReport(&out, rep, []string{"decisions.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "changed by rule") {
		t.Errorf("a table by rule without rows:\n%s", out.String())
	}
	containsInOrder(t, lines(out.String()), []string{"changed by tool  occurrences", "shell            1"})
}

// TestReplayUnsettledOutcome: replayed against the blocking pack, the log whose line 3
// no line settles changes two decisions: line 2's, which the log confirms, and line
// 4's, which it cannot. --json counts both in changed and each in confirmed or
// unconfirmed, --fail-on-change fails on them, and the tables say how many the log
// confirms.
func TestReplayUnsettledOutcome(t *testing.T) {
	args := []string{"replay", "--capability", sampleCap, "--rules", sampleRules, "--config", sampleConfig,
		"--against", shellBlocks, "--against-config", sampleConfig, "--log", unknownLog, "--fail-on-change"}
	stdout, stderr, code := oarctl(t, append(args, "--json")...)
	if code != exitFail || stderr != "" {
		t.Fatalf("exit %d, stderr %s; want %d", code, stderr, exitFail)
	}
	var rep struct{ Changed, Confirmed, Unconfirmed int }
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if rep.Changed != 2 || rep.Confirmed != 1 || rep.Unconfirmed != 1 {
		t.Errorf("%d changed, %d confirmed, %d unconfirmed; want 2, 1 and 1:\n%s", rep.Changed, rep.Confirmed, rep.Unconfirmed, stdout)
	}

	stdout, stderr, code = oarctl(t, args...)
	if code != exitFail || stderr != "" {
		t.Fatalf("exit %d, stderr %s; want %d", code, stderr, exitFail)
	}
	containsInOrder(t, lines(stdout), []string{
		"changed                2",
		"  confirmed            1",
		"  unconfirmed          1",
		"changed by rule                  occurrences  confirmed  unconfirmed",
		"acme.security/SHELL_AFTER_FETCH  2            1          1",
		"changed by tool  occurrences  confirmed  unconfirmed",
		"shell            2            1          1",
		"changes (2 of 2, 1 unconfirmed):",
		"2     agent-01",
		"4     agent-01  tool.pre_invoke  shell  nudge (acme.security/SHELL_AFTER_FETCH) → block (acme.security/SHELL_AFTER_FETCH) (unconfirmed: the session's state is unknown since line 3 of " + unknownLog + ")",
		"the before side against the log: 4 of 4 decisions reproduced, 0 not",
	})
}

// TestReplayTablesCutLongToolNames: a tool name is the model's to choose, and the text
// report's tables pad every row to the widest cell, so a name is shown cut to
// diag.MaxValueLen code points: one of 100,000 characters among a thousand tools no
// longer makes every row 100,000 wide.
func TestReplayTablesCutLongToolNames(t *testing.T) {
	long := strings.Repeat("T", 100_000)
	r := &replay.Report{ByTool: replay.Counts{{Name: long, Count: 1}}}
	for i := range 1000 {
		r.ByTool = append(r.ByTool, replay.Count{Name: fmt.Sprintf("tool_%d", i), Count: 1})
	}
	var out strings.Builder
	if err := writeReport(&out, r, []string{"decisions.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if n := out.Len(); n > 400_000 {
		t.Errorf("a report of %d bytes", n)
	}
	if !strings.Contains(out.String(), strings.Repeat("T", diag.MaxValueLen)+"…") {
		t.Error("the long name is not shown cut")
	}
}
