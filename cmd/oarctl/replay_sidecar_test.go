package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/replay"
	"github.com/oar-operator/oar-operator/internal/sidecar"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
	"github.com/oar-operator/oar-operator/internal/sidecar/sidecartest"
	"github.com/oar-operator/oar-operator/internal/sidecar/standalone"
)

// replica is one engine sidecar serving the samples with its sessions in a shared
// Redis and its decision log in a file, built as oar-engine builds it from
// --capability, --rules, --config, --session-store and --decision-log.
type replica struct {
	base string
	stop func(t *testing.T)
}

func startReplica(t *testing.T, redisURL, prefix, logPath string, timeout time.Duration) *replica {
	t.Helper()
	store, err := redisstore.New(redisstore.Options{URL: redisURL, Prefix: prefix, Timeout: timeout, CacheSessions: redisstore.DefaultCacheSessions})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	decisions := decisionlog.NewWriter(f, decisionlog.Options{Sample: 1})
	sc := sidecar.New(sidecar.Options{
		Documents:      &standalone.Files{Capability: sampleCap, Rules: []string{sampleRules}, Configs: []string{sampleConfig}},
		SharedSessions: store, DecisionLog: decisions, Log: logr.Discard(),
	})
	base, stopRun := sidecartest.Serve(t, sc)
	r := &replica{base: base}
	stopped := false
	r.stop = func(t *testing.T) {
		if stopped {
			return
		}
		stopped = true
		err := errors.Join(stopRun(), decisions.Close(context.Background()), f.Close(), store.Close())
		if err != nil {
			t.Errorf("stopping the sidecar: %v", err)
		}
	}
	t.Cleanup(func() { r.stop(t) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if resp, err := http.Get(r.base + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the sidecar is not ready after 10s")
		}
	}
}

// call posts a tool call of session agent-01 and returns the answer.
func (r *replica) call(t *testing.T, tool string) *engine.Decision {
	t.Helper()
	resp, err := http.Post(r.base+"/v1/evaluate", "application/json",
		strings.NewReader(`{"anchor": "tool.pre_invoke", "session_id": "agent-01", "tool_call": {"name": "`+tool+`", "arguments": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := sidecar.Answer{Decision: &engine.Decision{}}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, %v", tool, resp.StatusCode, err)
	}
	return a.Decision
}

// TestReplaySidecarLogWithUnknownOutcome: two sidecars share a session in a real
// Redis. Sidecar A commits a web fetch and a nudged shell call; then Redis holds its
// writes (CLIENT PAUSE WRITE), so A's next commit and the commit sent again are not
// answered within the store's timeout, and A logs that line with
// session_outcome_unknown. Sidecar B then commits a call of the session, and A a shell
// call reading B's version. Replayed with SHELL_AFTER_FETCH blocking, A's log alone
// cannot say whether line 3 was applied: the change of line 2 is confirmed, the change
// of line 4 unconfirmed, in --json and in the tables. With B's log too, B's line
// settles line 3, and both changes are confirmed.
func TestReplaySidecarLogWithUnknownOutcome(t *testing.T) {
	srv := redistest.StartT(t) // its own server: the pause holds every client's writes
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	// Each call's bound; the commit held by the pause costs twice this.
	const timeout = time.Second
	a := startReplica(t, srv.URL, "replay:", logA, timeout)
	b := startReplica(t, srv.URL, "replay:", logB, timeout)

	if d := a.call(t, "web_fetch"); d.Decision != "none" {
		t.Fatalf("line 1, a web fetch: %+v", d)
	}
	if d := a.call(t, "shell"); d.Decision != "nudge" {
		t.Fatalf("line 2, a shell call after it: %+v", d)
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	ctx := context.Background()
	if err := rc.Do(ctx, "CLIENT", "PAUSE", 60_000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	if d := a.call(t, "web_fetch"); d.Decision != "none" {
		t.Fatalf("line 3, a web fetch whose commit Redis holds: %+v", d)
	}
	if err := rc.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if d := b.call(t, "web_fetch"); d.Decision != "none" || len(d.Failures) != 0 {
		t.Fatalf("B's call: %+v", d)
	}
	if d := a.call(t, "shell"); d.Decision != "nudge" || len(d.Failures) != 0 {
		t.Fatalf("line 4, a shell call: %+v", d)
	}
	a.stop(t)
	b.stop(t)

	f, err := os.Open(logA)
	if err != nil {
		t.Fatal(err)
	}
	log, err := decisionlog.Read(f)
	_ = f.Close()
	if err != nil || len(log.Entries) != 4 {
		t.Fatalf("A's log: %d lines, %v", len(log.Entries), err)
	}
	if u := log.Entries[2].Record.SessionOutcomeUnknown; u == nil || log.Entries[2].Record.SessionState != nil {
		t.Errorf("line 3 (the commit held by the pause) is not marked session_outcome_unknown: %+v", log.Entries[2].Record)
	}

	args := []string{"replay", "--capability", sampleCap, "--rules", sampleRules, "--config", sampleConfig,
		"--against", shellBlocks, "--against-config", sampleConfig, "--log", logA}
	stdout, stderr, code := oarctl(t, append(args, "--json")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("--json: exit %d, stderr %s", code, stderr)
	}
	var rep replay.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	const rule = "acme.security/SHELL_AFTER_FETCH"
	if rep.Changed != 2 || rep.Confirmed != 1 || rep.Unconfirmed != 1 ||
		rep.UnconfirmedByRule.Of(rule) != 1 || len(rep.UnconfirmedByRule) != 1 || rep.UnconfirmedByTool.Of("shell") != 1 || len(rep.UnconfirmedByTool) != 1 {
		t.Errorf("A's log: %d changed, %d confirmed, %d unconfirmed, unconfirmed by rule %+v, by tool %+v; want 2, 1, 1, %s 1, shell 1:\n%s",
			rep.Changed, rep.Confirmed, rep.Unconfirmed, rep.UnconfirmedByRule, rep.UnconfirmedByTool, rule, stdout)
	}
	if len(rep.Changes) != 2 || rep.Changes[0].Line != 2 || rep.Changes[0].UncertainSince != nil ||
		rep.Changes[1].Line != 4 || rep.Changes[1].UncertainSince == nil || rep.Changes[1].UncertainSince.Line != 3 {
		t.Errorf("A's log: changes %+v; want line 2 settled and line 4 uncertain since line 3", rep.Changes)
	}

	stdout, stderr, code = oarctl(t, args...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	containsInOrder(t, lines(stdout), []string{
		"changed                2",
		"  confirmed            1",
		"  unconfirmed          1",
		"changed by rule                  occurrences  confirmed  unconfirmed",
		rule + "  2            1          1",
		"changed by tool  occurrences  confirmed  unconfirmed",
		"shell            2            1          1",
		"changes (2 of 2, 1 unconfirmed):",
		"2     agent-01  tool.pre_invoke  shell  nudge (" + rule + ") → block (" + rule + ")  ",
		"4     agent-01  tool.pre_invoke  shell  nudge (" + rule + ") → block (" + rule + ") (unconfirmed: the session's state is unknown since line 3 of " + logA + ")",
		"the before side against the log: 4 of 4 decisions reproduced, 0 not",
		"cannot reproduce 1 occurrences exactly: the session's state is unknown since line 3 of " + logA,
	})

	stdout, stderr, code = oarctl(t, append(args, "--log", logB, "--json")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("both logs: exit %d, stderr %s", code, stderr)
	}
	rep = replay.Report{}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if rep.Occurrences != 5 || rep.Changed != 2 || rep.Confirmed != 2 || rep.Unconfirmed != 0 || rep.Mismatched != 0 {
		t.Errorf("both logs: %d occurrences, %d changed, %d confirmed, %d unconfirmed, %d mismatched; want 5, 2, 2, 0, 0:\n%s",
			rep.Occurrences, rep.Changed, rep.Confirmed, rep.Unconfirmed, rep.Mismatched, stdout)
	}
}
