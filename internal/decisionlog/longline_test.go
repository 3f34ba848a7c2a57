package decisionlog

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// TestHTMLCharactersKeepALineShort: a tool argument of 900,000 '<' (a body under the
// sidecar's default 1 MiB) is written as it is, not six bytes a character, so its line
// reads back and so does every line after it.
func TestHTMLCharactersKeepALineShort(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, Options{Sample: 1})
	arg := strings.Repeat("<", 900_000) + "&>"
	big := &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s1", ToolCall: &engine.ToolCall{Name: "write", Arguments: map[string]any{"text": arg}}}
	small := &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s2", ToolCall: &engine.ToolCall{Name: "read", Arguments: map[string]any{}}}
	d := &engine.Decision{Decision: "none"}
	w.Log("sha256:x", small, 0, d, Session{})
	w.Log("sha256:x", big, 0, d, Session{})
	for range 3 {
		w.Log("sha256:x", small, 0, d, Session{})
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Split(out.Bytes(), []byte("\n")); len(lines[1]) > len(arg)+1000 {
		t.Errorf("the line of a %d-byte argument is %d bytes", len(arg), len(lines[1]))
	}
	log, err := Read(bytes.NewReader(out.Bytes()))
	if err != nil || len(log.Entries) != 5 {
		t.Fatalf("the writer wrote 5 lines; Read returns %d entries, %v", len(log.Entries), err)
	}
	if got := log.Entries[1].Occ.ToolCall.Arguments["text"]; got != arg {
		t.Errorf("the argument reads back as %d bytes, not the %d written", len(got.(string)), len(arg))
	}
}

// TestLongLineIsReportedAlone: a line longer than a line may hold, or one that is
// long and no decision, is that line's error; the lines after it still read.
func TestLongLineIsReportedAlone(t *testing.T) {
	long := strings.Repeat("x", 5<<20) // longer than the reader used to take
	input := decisionLine + "\n" + long + "\n" + decisionLine + "\n" + decisionLine
	log, err := Read(strings.NewReader(input))
	if len(log.Entries) != 3 || log.Entries[2].Line != 4 {
		t.Fatalf("%d entries, %v", len(log.Entries), err)
	}
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || strings.Count(err.Error(), "line ") != 1 {
		t.Errorf("error %.200v; want one, of line 2", err)
	}

	// Past the bound, a line is read past without being kept.
	input = decisionLine + "\n" + long + "\n" + decisionLine + "\n" + long
	log, err = read(strings.NewReader(input), len(decisionLine))
	if len(log.Entries) != 2 || log.Entries[1].Line != 3 {
		t.Fatalf("%d entries, %v", len(log.Entries), err)
	}
	for _, want := range []string{"line 2: the line is 5242880 bytes, more than the", "line 4: the line is 5242880 bytes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestWriterNeverWritesALineTheReaderRefuses: an occurrence whose line would be longer
// than MaxLineBytes is logged as a too_long marker naming its session, anchor and
// size, which Read reports as that line's error; the other lines read.
func TestWriterNeverWritesALineTheReaderRefuses(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, Options{Sample: 1, Now: fixedNow, maxLine: 400})
	big := &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s1", ToolCall: &engine.ToolCall{Name: "write", Arguments: map[string]any{"text": strings.Repeat("y", 500)}}}
	small := &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s1", ToolCall: &engine.ToolCall{Name: "read", Arguments: map[string]any{}}}
	d := &engine.Decision{Decision: "none"}
	w.Log("sha256:x", small, 0, d, Session{})
	w.Log("sha256:x", big, 0, d, Session{})
	w.Log("sha256:x", small, 0, d, Session{})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.TooLong() != 1 || w.Written() != 3 {
		t.Errorf("too long %d, written %d; want 1 and 3", w.TooLong(), w.Written())
	}
	lines := strings.Split(out.String(), "\n")
	const marker = `{"kind":"decision","time":"2026-12-01T12:00:00Z","bundle":"sha256:x","session_id":"s1","anchor":"tool.pre_invoke","too_long":`
	if !strings.HasPrefix(lines[1], marker) {
		t.Errorf("line 2 is %s; want the marker", lines[1])
	}
	log, err := read(strings.NewReader(out.String()), 400)
	if len(log.Entries) != 2 || log.Entries[1].Line != 3 {
		t.Fatalf("%d entries, %v", len(log.Entries), err)
	}
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "the occurrence is not in the log: its line would have been") {
		t.Errorf("error %v; want line 2's, the marker's", err)
	}
}

// TestReadRefusesContentLengthsNoLineHolds: a content length below zero, or above
// what a line may hold, is the line's error: a replay stands in a placeholder of that
// length for the text.
func TestReadRefusesContentLengthsNoLineHolds(t *testing.T) {
	const head = `{"kind":"decision","anchor":"content.output","decision":"none","occurrence":{"anchor":"content.output"},"content":{"mode":"omit","length":`
	for _, tc := range []struct{ length, want string }{
		{"-1", "content.length -1 is negative"},
		{"100000000000", "content.length 100000000000 is more code points than a line may hold"},
	} {
		log, err := Read(strings.NewReader(head + tc.length + "}}\n"))
		if len(log.Entries) != 0 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("length %s: %d entries, %v; want %q", tc.length, len(log.Entries), err, tc.want)
		}
	}
	if log, err := Read(strings.NewReader(head + "0}}\n")); err != nil || len(log.Entries) != 1 {
		t.Errorf("length 0: %d entries, %v", len(log.Entries), err)
	}
}
