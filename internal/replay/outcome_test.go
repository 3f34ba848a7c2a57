package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
)

// how says what became of one call of a session kept in a shared store, and how its
// line says so.
type how int

const (
	// committed: its changes were committed; its line has session_state.
	committed how = iota
	// unknownApplied: its commit's outcome was unknown to the sidecar, which answered
	// it without its session; the commit was applied. Its line has
	// session_outcome_unknown, or session_unavailable when oldWriter is set.
	unknownApplied
	// unknownLost: the same, but the commit was not applied.
	unknownLost
	// unlogged: committed by a replica whose log is missing; no line.
	unlogged
)

// call is one call of session s: a shell call, or an output when output is set
// (which no rule counts), with what became of it and the versions it read and left.
type call struct {
	how           how
	read, written string
	output        bool
	// at is its line's time in seconds; 0: its place in the calls.
	at int
}

// outcomeLog is the log a sidecar writes of calls, as their decisions and the
// session's state in the store went: an answer without the session claims none of its
// changes, which reach the store all the same when its commit was applied.
func outcomeLog(t *testing.T, digest string, prog *engine.Program, calls []call, oldWriter bool) []byte {
	t.Helper()
	shared := newRuntime() // the session as the shared store holds it
	var lines []string
	for i, c := range calls {
		occ := &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s", ToolCall: &engine.ToolCall{Name: "shell", Arguments: map[string]any{}}}
		body := `{"anchor":"tool.pre_invoke","session_id":"s","tool_call":{"name":"shell","arguments":{}}}`
		if c.output {
			occ = &engine.Occurrence{Anchor: "content.output", SessionID: "s"}
			body = `{"anchor":"content.output","session_id":"s"}`
		}
		if c.read == "" && !c.output {
			shared = newRuntime() // a new session, or one the store forgot
		}
		var d *engine.Decision
		state := fmt.Sprintf(`,"session_state":{"read":%q,"written":%q}`, c.read, c.written)
		switch c.how {
		case committed, unlogged:
			d = prog.Evaluate(shared, occ)
		case unknownApplied, unknownLost:
			snap := redisstore.Unavailable("s", errors.New("the session store is unreachable, and this occurrence's changes may or may not have been applied"))
			d = prog.Evaluate(&engine.Runtime{Counters: snap, Activity: snap, Events: discard{}, Detectors: engine.ReservedDetectors()}, occ)
			if c.how == unknownApplied {
				prog.Evaluate(shared, occ)
			}
			state = fmt.Sprintf(`,"session_outcome_unknown":{"read":%q,"written":%q}`, c.read, c.written)
			if oldWriter {
				state = `,"session_unavailable":true`
			}
		}
		if c.how == unlogged {
			continue
		}
		if c.read == "" && !(oldWriter && c.how != committed) {
			state += `,"session_began":true`
		}
		if c.output {
			state = ""
		}
		at := c.at
		if at == 0 {
			at = i + 1
		}
		applied, _ := json.Marshal(d.Applied)
		lines = append(lines, fmt.Sprintf(`{"kind":"decision","time":"2026-12-01T00:00:%02dZ","bundle":%q,"session_id":"s","anchor":%q,"occurrence":%s,"decision":%q,"code":%q,"rule":%q,"fired":[],"applied":%s%s}`,
			at, digest, occ.Anchor, body, d.Decision, d.Code, d.Rule, applied, state))
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// TestOutcomeUnknownProvedApplied: a call whose commit's outcome the sidecar did not
// know, logged (late, as a lost answer makes it) with the version it read and the one
// its commit would have left, is proved applied by the next line, which read that
// version: it replays in its place as it was answered, without the session, and its
// changes reach the session's counters, so every later line reproduces. The log an
// older writer made of the same calls, which says session_unavailable, does not
// reproduce: the later lines count one call too few.
func TestOutcomeUnknownProvedApplied(t *testing.T) {
	b := sealedBundle(t, rules)
	s := side(t, b)
	calls := []call{{how: committed, written: "v1"}, {how: unknownApplied, read: "v1", written: "v2", at: 9},
		{how: committed, read: "v2", written: "v3"}, {how: committed, read: "v3", written: "v4"}, {how: committed, read: "v4", written: "v5"}}
	entries := read(t, outcomeLog(t, b.Digest, s.Program, calls, false))
	if entries[1].Record.SessionOutcomeUnknown == nil || entries[1].Record.Decision != "block" || entries[3].Record.Decision != "block" {
		t.Fatalf("line 2 %+v, line 4 %+v; want the call answered without its session blocked (COUNT_SHELL fails closed), and the fourth call, the third counted... blocked", entries[1].Record, entries[3].Record)
	}
	rep := Run(entries, Options{Before: s, After: s})
	if rep.Reproduced != 5 || rep.Mismatched != 0 || rep.Changed != 0 || len(rep.Unreproducible) != 0 {
		t.Errorf("%d reproduced, %d mismatched %+v, unreproducible %+v", rep.Reproduced, rep.Mismatched, rep.Mismatches, rep.Unreproducible)
	}

	old := Run(read(t, outcomeLog(t, b.Digest, s.Program, calls, true)), Options{Before: s, After: s})
	if old.Mismatched == 0 {
		t.Errorf("an older writer's log, which says session_unavailable, reproduces: %+v", old)
	}
}

// TestOutcomeUnknownProvedNotApplied: a call whose commit's outcome the sidecar did
// not know is proved not applied by another commit from the version it read: it
// leaves the session's counters alone, and every line reproduces.
func TestOutcomeUnknownProvedNotApplied(t *testing.T) {
	b := sealedBundle(t, rules)
	s := side(t, b)
	calls := []call{{how: committed, written: "v1"}, {how: unknownLost, read: "v1", written: "v2"},
		{how: committed, read: "v1", written: "v3"}, {how: committed, read: "v3", written: "v4"}, {how: committed, read: "v4", written: "v5"}}
	rep := Run(read(t, outcomeLog(t, b.Digest, s.Program, calls, false)), Options{Before: s, After: s})
	if rep.Reproduced != 5 || rep.Mismatched != 0 || len(rep.Unreproducible) != 0 {
		t.Errorf("%d reproduced, %d mismatched %+v, unreproducible %+v", rep.Reproduced, rep.Mismatched, rep.Mismatches, rep.Unreproducible)
	}
}

// TestOutcomeUnknownUnprovedIsUncertain: when no line proves whether such a commit was
// applied (here the next commit, from the version it left, is in a missing log), the
// session's state is unknown from that line until the session begins again: its later
// lines that use the session are reported as such, their mismatches with that reason
// rather than "the before rules decide otherwise", and their changes as unconfirmed,
// naming the line; a line at an anchor that uses no session state, and the lines after
// the session began again, are reported as usual.
func TestOutcomeUnknownUnprovedIsUncertain(t *testing.T) {
	rep := replayUnproved(t, 0)
	if rep.Mismatched == 0 {
		t.Fatalf("the replay as if line 2's commit had not been applied reproduces every line: the test shows nothing")
	}
	for _, m := range rep.Mismatches {
		if m.Line != 3 && m.Line != 4 || !strings.HasPrefix(m.Reason, ReasonUncertain+" since line 2") {
			t.Errorf("mismatch at line %d: %q; want only lines 3 and 4, the session's state unknown since line 2", m.Line, m.Reason)
		}
	}
	if len(rep.Unreproducible) != 1 || !strings.HasPrefix(rep.Unreproducible[0].Reason, ReasonUncertain+" since line 2:") ||
		rep.Unreproducible[0].Count != 2 || rep.Unreproducible[0].Lines[0].Line != 3 || rep.Unreproducible[0].Lines[1].Line != 4 {
		t.Errorf("unreproducible %+v; want lines 3 and 4, uncertain since line 2", rep.Unreproducible)
	}
	var uncertain, certain int
	for _, c := range rep.Changes {
		switch {
		case c.Line == 3 || c.Line == 4:
			if c.UncertainSince == nil || c.UncertainSince.Line != 2 {
				t.Errorf("change at line %d: uncertain since %v; want line 2", c.Line, c.UncertainSince)
			}
			uncertain++
		case c.UncertainSince != nil:
			t.Errorf("change at line %d: uncertain since %v; its session began again at line 6", c.Line, c.UncertainSince)
		default:
			certain++
		}
	}
	if uncertain == 0 || certain == 0 {
		t.Errorf("changes %+v; want some in the uncertain lines and some after the session began again", rep.Changes)
	}
}

// replayUnproved replays, under a tighter breaker, the log of a session whose state is
// unknown from line 2 on (a commit whose outcome no line proves) until it begins again
// at line 6, listing at most maxListed changes.
func replayUnproved(t *testing.T, maxListed int) *Report {
	t.Helper()
	b := sealedBundle(t, rules)
	s := side(t, b)
	after := side(t, sealedBundle(t, strings.Replace(rules, `fire_count_of("acme.ops/COUNT_SHELL") >= 3`, `fire_count_of("acme.ops/COUNT_SHELL") >= 2`, 1)))
	calls := []call{{how: committed, written: "v1"}, {how: unknownApplied, read: "v1", written: "v2"}, {how: unlogged, read: "v2", written: "v9"},
		{how: committed, read: "v9", written: "v10"}, {how: committed, read: "v10", written: "v11"}, {output: true},
		{how: committed, written: "w1"}, {how: committed, read: "w1", written: "w2"}, {how: committed, read: "w2", written: "w3"}}
	return Run(read(t, outcomeLog(t, b.Digest, s.Program, calls, false)), Options{Before: s, After: after, MaxListed: maxListed})
}

// TestUnconfirmedChangesCountedApart: the changes replayed against a session whose
// state is unknown are what the rule change does only if the log's doubt resolves one
// way. They are in changed, by_rule and by_tool, which count every change as they
// always did (a CI check on changed still fails closed), and counted apart in
// unconfirmed, unconfirmed_by_rule and unconfirmed_by_tool, the others in confirmed;
// the changes listed are of both kinds, and those not listed are the rest of changed.
func TestUnconfirmedChangesCountedApart(t *testing.T) {
	rep := replayUnproved(t, 0)
	var confirmed, unconfirmed int
	for _, c := range rep.Changes {
		if c.UncertainSince != nil {
			unconfirmed++
		} else {
			confirmed++
		}
	}
	if confirmed == 0 || unconfirmed == 0 || rep.ChangesNotListed != 0 {
		t.Fatalf("changes %+v, %d not listed; want all listed, some confirmed and some not", rep.Changes, rep.ChangesNotListed)
	}
	if rep.Changed != confirmed+unconfirmed || rep.Confirmed != confirmed || rep.Unconfirmed != unconfirmed {
		t.Errorf("%d changed, %d confirmed and %d unconfirmed; want %d, %d and %d", rep.Changed, rep.Confirmed, rep.Unconfirmed, confirmed+unconfirmed, confirmed, unconfirmed)
	}
	const limit = "acme.ops/SHELL_LIMIT"
	if !slices.Equal(rep.ByRule, []Count{{limit, confirmed + unconfirmed}}) || !slices.Equal(rep.ByTool, []Count{{"shell", confirmed + unconfirmed}}) {
		t.Errorf("by rule %v, by tool %v; want the %d changes, SHELL_LIMIT's, of shell calls", rep.ByRule, rep.ByTool, confirmed+unconfirmed)
	}
	if !slices.Equal(rep.UnconfirmedByRule, []Count{{limit, unconfirmed}}) || !slices.Equal(rep.UnconfirmedByTool, []Count{{"shell", unconfirmed}}) {
		t.Errorf("unconfirmed by rule %v, by tool %v; want the %d unconfirmed changes", rep.UnconfirmedByRule, rep.UnconfirmedByTool, unconfirmed)
	}

	if one := replayUnproved(t, 1); len(one.Changes) != 1 || one.ChangesNotListed != one.Changed-1 {
		t.Errorf("%d changes listed and %d not of %d; want 1 and %d", len(one.Changes), one.ChangesNotListed, one.Changed, one.Changed-1)
	}
}
