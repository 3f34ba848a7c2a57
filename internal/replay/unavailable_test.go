package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
)

// sessionLog is the log of five shell calls of one session kept in a shared store, as
// a sidecar would write it, the second answered without its session (the store
// unreachable) when unavailable is not 0: that line carries no session_state, says
// session_unavailable when marked, and changed nothing of the session. The others are
// committed one after the other.
func sessionLog(t *testing.T, digest string, prog *engine.Program, unavailable int, marked bool) []byte {
	t.Helper()
	shared := newRuntime() // the session as the shared store holds it
	var lines []string
	prev := ""
	for i := 1; i <= 5; i++ {
		occ := &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s", ToolCall: &engine.ToolCall{Name: "shell", Arguments: map[string]any{}}}
		var d *engine.Decision
		state := ""
		if i == unavailable {
			snap := redisstore.Unavailable("s", errors.New("the session store is unreachable"))
			d = prog.Evaluate(&engine.Runtime{Counters: snap, Activity: snap, Events: discard{}, Detectors: engine.ReservedDetectors()}, occ)
			if marked {
				state = `,"session_unavailable":true`
			}
		} else {
			d = prog.Evaluate(shared, occ)
			next := fmt.Sprintf("v%d", i)
			state = fmt.Sprintf(`,"session_state":{"read":%q,"written":%q}`, prev, next)
			if prev == "" {
				state += `,"session_began":true`
			}
			prev = next
		}
		applied, _ := json.Marshal(d.Applied)
		lines = append(lines, fmt.Sprintf(`{"kind":"decision","time":"2026-12-01T00:00:0%dZ","bundle":%q,"session_id":"s","anchor":"tool.pre_invoke","occurrence":{"anchor":"tool.pre_invoke","session_id":"s","tool_call":{"name":"shell","arguments":{}}},"decision":%q,"code":%q,"rule":%q,"fired":[],"applied":%s%s}`,
			i, digest, d.Decision, d.Code, d.Rule, applied, state))
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// TestAnsweredWithoutSessionLeavesTheSessionAlone: a line answered without its session
// (session_unavailable) replays as it was answered, its rules needing the session
// taking their on_error, and the session's counters go on as the store kept them, so
// every later line reproduces too. A line of an older writer, without the marker,
// replays as it always did, against the session's state.
func TestAnsweredWithoutSessionLeavesTheSessionAlone(t *testing.T) {
	b := sealedBundle(t, rules)
	s := side(t, b)
	entries := read(t, sessionLog(t, b.Digest, s.Program, 2, true))
	if !entries[1].Record.SessionUnavailable || entries[1].Record.Decision == "warn" {
		t.Fatalf("line 2: %+v; want a line answered without the session, which cannot count the call", entries[1].Record)
	}
	rep := Run(entries, Options{Before: s, After: s})
	if rep.Mismatched != 0 || rep.Reproduced != 5 || rep.Changed != 0 {
		t.Fatalf("%d reproduced, %d mismatched: %+v", rep.Reproduced, rep.Mismatched, rep.Mismatches)
	}
	if rep.Before.Of("block") != 2 {
		t.Errorf("decisions %v; the fourth and fifth calls are the third and fourth counted, blocked", rep.Before)
	}

	old := Run(read(t, sessionLog(t, b.Digest, s.Program, 2, false)), Options{Before: s, After: s})
	if old.Mismatched == 0 || old.Mismatches[0].Line != 2 {
		t.Errorf("without the marker, line 2 replays against the session's state: %d mismatched %+v", old.Mismatched, old.Mismatches)
	}
}
