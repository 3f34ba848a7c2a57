package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
)

const shellWarns = `{"oar": "1.0", "namespace": "acme.ops", "id": "SHELL", "kind": "policy", "anchor": "tool.pre_invoke", "selector": {"tool": ["shell"]}, "requires": {"profiles": ["tool"]}, "on_fire": ["publish_event"], "effect": "warn"}`

// TestDecisionLogFlag: --decision-log=stdout puts one decision line per occurrence
// next to the publish_event records; --decision-log=FILE appends them to the file,
// every buffered line written by the time the command exits.
func TestDecisionLogFlag(t *testing.T) {
	dir := t.TempDir()
	capPath, rulesPath := filepath.Join(dir, "capability.yaml"), filepath.Join(dir, "rules.yaml")
	writeFile(t, capPath, laptopCapability)
	writeFile(t, rulesPath, shellWarns)
	shell := `{"anchor": "tool.pre_invoke", "session_id": "s", "tool_call": {"name": "shell", "arguments": {}}}`

	e := startEngine(t, "--probe-address", "", "--capability", capPath, "--rules", rulesPath, "--decision-log", "stdout", "--decision-log-content", "full")
	for range 3 {
		e.evaluate(t, shell)
	}
	e.stop(t)
	log, err := decisionlog.Read(strings.NewReader(e.stdout.String()))
	if err != nil || len(log.Entries) != 3 || log.Skipped != 3 || log.Entries[0].Record.Rule != "acme.ops/SHELL" {
		t.Fatalf("stdout: %d decision lines, %d others, %v:\n%s", len(log.Entries), log.Skipped, err, e.stdout)
	}

	file := filepath.Join(dir, "decisions.jsonl")
	e = startEngine(t, "--probe-address", "", "--capability", capPath, "--rules", rulesPath, "--decision-log", file, "--decision-log-sample", "1")
	e.evaluate(t, shell)
	e.stop(t)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	log, err = decisionlog.Read(strings.NewReader(string(data)))
	if err != nil || len(log.Entries) != 1 || strings.Count(e.stdout.String(), `"kind":"decision"`) != 0 {
		t.Fatalf("file: %d lines %v; stdout %s", len(log.Entries), err, e.stdout)
	}
}

// TestDecisionLogFlagsRefused: what cannot work is refused before anything starts.
func TestDecisionLogFlagsRefused(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"--decision-log-content", "all"}},
		{[]string{"--decision-log-sample", "1.5"}},
		{[]string{"--decision-log-sample", "-0.1"}},
		{[]string{"--decision-log-buffer", "0"}},
	} {
		if _, err := parseFlags(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.args[0]) {
			t.Errorf("%v: %v", c.args, err)
		}
	}
}
