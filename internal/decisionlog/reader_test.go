package decisionlog

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
)

const decisionLine = `{"kind":"decision","time":"2026-12-01T12:00:00Z","bundle":"sha256:abc","session_id":"s1","anchor":"tool.pre_invoke","occurrence":{"anchor":"tool.pre_invoke","session_id":"s1","tool_call":{"name":"read","arguments":{}}},"decision":"allow","fired":[],"applied":[]}`

// TestReadSkipsOtherLinesAndNamesBadOnes: publish_event records sharing stdout are
// skipped; a line that is no JSON object, or a decision line that is malformed, is an
// error naming its line, and the good lines still read.
func TestReadSkipsOtherLinesAndNamesBadOnes(t *testing.T) {
	input := strings.Join([]string{
		decisionLine,
		`{"time":"2026-12-01T12:00:00Z","bundle":"sha256:abc","rule":"r","anchor":"tool.pre_invoke","effect":"warn"}`,
		``,
		`not json`,
		`{"kind":"decision","occurrence":{"anchor":"a"}}`,
		`{"kind":"decision","anchor":"a","decision":"allow","occurrence":{"anchor":"a","bogus":1}}`,
		`{"kind":"decision","anchor":"a","decision":"allow","occurrence":{"anchor":"a","content":"x"},"content":{"mode":"omit","length":1}}`,
		`{"kind":"decision","anchor":"b","decision":"allow","occurrence":{"anchor":"a"}}`,
		`{"kind":"decision","anchor":"a","decision":"allow","occurrence":{"anchor":"a"},"extra":1}`,
		`{"kind":"decision","anchor":"a","decision":"allow","Decision":"block","occurrence":{"anchor":"a"}}`,
		`{"kind":"decision","anchor":"a","decision":"allow","decision":"block","occurrence":{"anchor":"a"}}`,
		`{"kind":"decision","anchor":"a","decision":"allow","occurrence":{"anchor":"a"},"session_state":{"read":"v1","written":"v2","Read":"v0"}}`,
		`{"kind":"decision","anchor":"a","decision":"allow","occurrence":{"anchor":"a"},"session_state":{"read":"v1","written":""}}`,
		decisionLine,
	}, "\n")
	log, err := Read(strings.NewReader(input))
	if len(log.Entries) != 2 || log.Entries[0].Line != 1 || log.Entries[1].Line != 14 {
		t.Fatalf("entries %+v", log.Entries)
	}
	if log.Skipped != 2 {
		t.Errorf("skipped %d lines; want 2 (the event and the blank line)", log.Skipped)
	}
	for _, want := range []string{"line 4: not a JSON object", `line 5: a decision line: missing member "decision"`,
		`line 6: a decision line's occurrence: bogus: [OAR-CONF-18] unknown occurrence member`,
		"line 7: a decision line: content mode omit but the occurrence carries its content",
		"line 8: a decision line: anchor and session_id differ", `line 9: a decision line: unknown member "extra"`,
		`line 10: a decision line: unknown member "Decision"`, `line 11: a decision line: duplicate key "decision"`,
		`line 12: a decision line: unknown member "session_state.Read"`, `line 13: a decision line: session_state: a commit never leaves a session without a version`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	var le *LineError
	if !errors.As(err, &le) || le.Line != 4 {
		t.Errorf("the first error is not a *LineError of line 4: %v", err)
	}
}

// FuzzReadDecisionLog: whatever the input, Read never panics, and every entry it
// returns is a decision line whose occurrence the engine can take, whose content
// length a replay can stand a placeholder in for, whose line number is in the input,
// and which, written again, reads back the same (what it says of its session
// included).
func FuzzReadDecisionLog(f *testing.F) {
	f.Add([]byte(decisionLine + "\n"))
	f.Add([]byte(`{"kind":"decision","anchor":"a","decision":"block","occurrence":{"anchor":"a","content":"x","recent_activity":["r"]},"content":{"mode":"full","length":1}}`))
	f.Add([]byte(`{"kind":"decision","anchor":"a","decision":"none","occurrence":{"anchor":"a"},"session_began":true,"session_outcome_unknown":{"read":"","written":"v1"}}`))
	f.Add([]byte("{}\n\n[1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, _ := Read(bytes.NewReader(data))
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, e := range log.Entries {
			if e.Occ == nil || e.Record.Kind != Kind || e.Record.Decision == "" || e.Occ.Anchor != e.Record.Anchor {
				t.Fatalf("entry %+v", e)
			}
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("line %d of %d", e.Line, lines)
			}
			if c := e.Record.Content; c != nil && (c.Length < 0 || c.Length > MaxLineBytes) {
				t.Fatalf("content length %d: a replay cannot stand in a placeholder of it", c.Length)
			}
			if e.Record.Reproducible() != (e.Record.Content == nil || e.Occ.HasContent) {
				t.Fatalf("Reproducible %v but the occurrence has content %v", e.Record.Reproducible(), e.Occ.HasContent)
			}
			// Written again, in full, the occurrence and the session state read back
			// the same.
			rec := NewRecord(time.Time{}, e.Record.Bundle, ContentFull, e.Occ, &engine.Decision{Decision: e.Record.Decision})
			rec.SessionBegan, rec.SessionState, rec.SessionUnavailable = e.Record.SessionBegan, e.Record.SessionState, e.Record.SessionUnavailable
			rec.SessionOutcomeUnknown = e.Record.SessionOutcomeUnknown
			line, err := MarshalLine(rec)
			if err != nil {
				t.Fatalf("writing %+v again: %v", e.Occ, err)
			}
			again, _, err := ReadLine(line)
			if err != nil || !reflect.DeepEqual(again.Occ, e.Occ) || !reflect.DeepEqual(again.Record.SessionState, e.Record.SessionState) || again.Record.SessionBegan != e.Record.SessionBegan ||
				again.Record.SessionUnavailable != e.Record.SessionUnavailable || !reflect.DeepEqual(again.Record.SessionOutcomeUnknown, e.Record.SessionOutcomeUnknown) {
				t.Fatalf("written again as %s: %+v %+v, %v; want %+v %+v", line, again.Occ, again.Record.SessionState, err, e.Occ, e.Record.SessionState)
			}
		}
	})
}

// TestErrors: the errors of a Read are listed one per line that did not read, in
// line order, and a Read without error lists none.
func TestErrors(t *testing.T) {
	_, err := Read(strings.NewReader("x\n" + decisionLine + "\n[]\n"))
	errs := Errors(err)
	var first, second *LineError
	if len(errs) != 2 || !errors.As(errs[0], &first) || !errors.As(errs[1], &second) || first.Line != 1 || second.Line != 3 {
		t.Errorf("errors %v; want lines 1 and 3's", errs)
	}
	if _, err := Read(strings.NewReader(decisionLine)); err != nil || Errors(err) != nil {
		t.Errorf("errors %v of a log that reads", Errors(err))
	}
}

// TestReadSessionUnavailable: a line answered without its session reads with
// SessionUnavailable; one that also says it found the session's state contradicts
// itself and is refused.
func TestReadSessionUnavailable(t *testing.T) {
	const head = `{"kind":"decision","anchor":"a","decision":"none","occurrence":{"anchor":"a"},"session_unavailable":true`
	log, err := Read(strings.NewReader(head + "}\n" + head + `,"session_began":true}` + "\n" + head + `,"session_state":{"read":"v1","written":"v1"}}` + "\n"))
	if len(log.Entries) != 1 || !log.Entries[0].Record.SessionUnavailable {
		t.Fatalf("entries %+v", log.Entries)
	}
	for _, want := range []string{"line 2: a decision line: session_unavailable:", "line 3: a decision line: session_unavailable:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestReadSessionOutcomeUnknown: a line answered without its session after a commit
// whose outcome is unknown reads with the versions its commit read and would have left,
// session_began included when the session did not exist; one that also says it was
// committed or left the session alone, whose commit would have left no new version, or
// whose commit read no version (the session held no state) without session_began, which
// the sidecar always writes then, contradicts itself and is refused, as is an unknown
// member of the versions; one committed whose correction's outcome is unknown says
// session_state and, from the version it left, session_outcome_unknown. A line of an
// older writer, which says session_unavailable for such an occurrence, still reads.
func TestReadSessionOutcomeUnknown(t *testing.T) {
	const head = `{"kind":"decision","anchor":"a","decision":"none","occurrence":{"anchor":"a"}`
	input := strings.Join([]string{
		head + `,"session_outcome_unknown":{"read":"v1","written":"v2"}}`,
		head + `,"session_began":true,"session_outcome_unknown":{"read":"","written":"v2"}}`,
		head + `,"session_unavailable":true}`,
		head + `,"session_state":{"read":"v1","written":"v2"},"session_outcome_unknown":{"read":"v2","written":"v3"}}`,
		head + `,"session_outcome_unknown":{"read":"v1","written":"v2"},"session_state":{"read":"v1","written":"v2"}}`,
		head + `,"session_outcome_unknown":{"read":"v1","written":"v2"},"session_unavailable":true}`,
		head + `,"session_outcome_unknown":{"read":"v1","written":"v1"}}`,
		head + `,"session_outcome_unknown":{"read":"v1","written":""}}`,
		head + `,"session_outcome_unknown":{"read":"v1","written":"v2","applied":true}}`,
		head + `,"session_outcome_unknown":{"read":"","written":"v2"}}`,
	}, "\n")
	log, err := Read(strings.NewReader(input))
	if len(log.Entries) != 4 {
		t.Fatalf("entries %+v", log.Entries)
	}
	if u := log.Entries[0].Record.SessionOutcomeUnknown; u == nil || *u != (SessionState{Read: "v1", Written: "v2"}) || log.Entries[0].Record.SessionUnavailable {
		t.Errorf("line 1: %+v", log.Entries[0].Record)
	}
	if r := log.Entries[1].Record; r.SessionOutcomeUnknown == nil || !r.SessionBegan {
		t.Errorf("line 2: %+v", r)
	}
	if r := log.Entries[2].Record; !r.SessionUnavailable || r.SessionOutcomeUnknown != nil {
		t.Errorf("line 3, an older writer's: %+v", r)
	}
	if r := log.Entries[3].Record; r.SessionState == nil || r.SessionOutcomeUnknown == nil || r.SessionOutcomeUnknown.Read != r.SessionState.Written {
		t.Errorf("line 4, a commit whose correction's outcome is unknown: %+v", r)
	}
	for _, want := range []string{"line 5: a decision line: session_outcome_unknown:", "line 6: a decision line: session_outcome_unknown:",
		"line 7: a decision line: session_outcome_unknown:", "line 8: a decision line: session_outcome_unknown:",
		`line 9: a decision line: unknown member "session_outcome_unknown.applied"`,
		`line 10: a decision line: session_outcome_unknown: "read" is empty`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
