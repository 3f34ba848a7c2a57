package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// engineProcess is one run of the command in this process, on a free port.
type engineProcess struct {
	base           string
	stdout, stderr *lockedBuffer
	cancel         context.CancelFunc
	exit           chan int
}

// startEngine runs the command with args (plus --port 0) until the test ends, and
// waits for it to be ready.
func startEngine(t *testing.T, args ...string) *engineProcess {
	t.Helper()
	e := &engineProcess{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exit: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.exit <- run(ctx, append([]string{"--port", "0"}, args...), e.stdout, e.stderr) }()
	t.Cleanup(func() { e.stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for e.base == "" && time.Now().Before(deadline) {
		if addr := servingAddress(e.stderr.String()); addr != "" {
			e.base = "http://" + addr
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e.base == "" {
		t.Fatalf("no serving address logged:\n%s", e.stderr)
	}
	for time.Now().Before(deadline) {
		if resp, err := http.Get(e.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("not ready:\n%s", e.stderr)
	return nil
}

// stop ends the run as SIGTERM would and checks the exit code.
func (e *engineProcess) stop(t *testing.T) {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case code := <-e.exit:
		if code != exitOK {
			t.Errorf("exit %d:\n%s", code, e.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Error("oar-engine did not stop")
	}
}

// evaluate posts one occurrence and decodes the decision.
func (e *engineProcess) evaluate(t *testing.T, occ string) engine.Decision {
	t.Helper()
	resp, err := http.Post(e.base+"/v1/evaluate", "application/json", strings.NewReader(occ))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var d engine.Decision
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &d) != nil {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	return d
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const laptopCapability = `
oar_capability_version: "1.0"
host: acme.laptop
anchors:
  core: {tool.pre_invoke: tool.pre_invoke}
  unsupported: [tool.handler, tool.post_invoke, agent.post_turn, agent.finalize, model.input, model.output, model.tool_result]
profiles: [tool]
`

// TestStandaloneServesPlainDocuments runs the command on a capability file and a rule
// file with no probe listener, then edits the rule: the edit is served, a broken edit
// is refused while the previous rule keeps deciding.
func TestStandaloneServesPlainDocuments(t *testing.T) {
	dir := t.TempDir()
	capPath, rulesPath := filepath.Join(dir, "capability.yaml"), filepath.Join(dir, "rules.yaml")
	writeFile(t, capPath, laptopCapability)
	writeFile(t, rulesPath, `{"oar": "1.0", "namespace": "acme.ops", "id": "SHELL", "kind": "policy", "anchor": "tool.pre_invoke", "selector": {"tool": ["shell"]}, "requires": {"profiles": ["tool"]}, "effect": "warn"}`)
	e := startEngine(t, "--probe-address", "", "--capability", capPath, "--rules", rulesPath, "--reload-interval", "10ms")
	shell := `{"anchor": "tool.pre_invoke", "tool_call": {"name": "shell", "arguments": {}}}`
	if d := e.evaluate(t, shell); d.Decision != "warn" || d.Rule != "acme.ops/SHELL" {
		t.Fatalf("decision %+v", d)
	}
	if strings.Contains(e.stderr.String(), `"server":"probes"`) {
		t.Error(`--probe-address "" still served probes`)
	}

	writeFile(t, rulesPath, `{"oar": "1.0", "namespace": "acme.ops", "id": "SHELL", "kind": "policy", "anchor": "tool.pre_invoke", "selector": {"tool": ["shell"]}, "requires": {"profiles": ["tool"]}, "effect": "block"}`)
	testpoll.Until(t, 10*time.Second, 10*time.Millisecond, "the edited rule to be served", func() bool { return e.evaluate(t, shell).Decision == "block" })
	writeFile(t, rulesPath, `{"oar": "1.0", "namespace": "acme.ops", "id": "SHELL", "kind": "policy", "anchor": "tool.pre_invoke", "when": "pth == 1", "effect": "warn"}`)
	testpoll.Until(t, 10*time.Second, 10*time.Millisecond, "the broken edit to be refused", func() bool { return strings.Contains(e.stderr.String(), "OAR-FACT-3") })
	if d := e.evaluate(t, shell); d.Decision != "block" {
		t.Errorf("after a refused edit: %+v; the previous rule must keep serving", d)
	}
}

// TestTwoEnginesShareSessionsInRedis runs the command twice on one Redis: a breaker
// tripped through one is open on the other at the next call.
func TestTwoEnginesShareSessionsInRedis(t *testing.T) {
	srv := redistest.StartT(t)
	dir := t.TempDir()
	capPath, rulesPath := filepath.Join(dir, "capability.yaml"), filepath.Join(dir, "rules.yaml")
	writeFile(t, capPath, laptopCapability)
	writeFile(t, rulesPath, `{"oar": "1.0", "namespace": "acme.ops", "id": "TRIP", "kind": "policy", "anchor": "tool.pre_invoke", "selector": {"tool": ["deploy"]}, "requires": {"profiles": ["tool"]}, "on_fire": ["increment_breaker"], "effect": "warn"}
---
{"oar": "1.0", "namespace": "acme.ops", "id": "OPEN", "kind": "invariant", "anchor": "tool.pre_invoke", "when": "breaker_count_of(\"acme.ops/TRIP\") >= 1", "effect": "block"}`)
	args := []string{"--probe-address", "", "--capability", capPath, "--rules", rulesPath, "--session-store", srv.URL, "--session-store-prefix", "two:"}
	a, b := startEngine(t, args...), startEngine(t, args...)
	if d := a.evaluate(t, `{"anchor": "tool.pre_invoke", "session_id": "s1", "tool_call": {"name": "deploy", "arguments": {}}}`); d.Decision != "warn" {
		t.Fatalf("the trip: %+v", d)
	}
	if d := b.evaluate(t, `{"anchor": "tool.pre_invoke", "session_id": "s1", "tool_call": {"name": "read", "arguments": {}}}`); d.Decision != "block" || d.Rule != "acme.ops/OPEN" {
		t.Errorf("the other engine after the trip: %+v", d)
	}
	if !strings.Contains(b.stderr.String(), `"sessionStore":"`+srv.URL+`"`) {
		t.Errorf("the start log does not name the session store:\n%s", b.stderr)
	}
}
