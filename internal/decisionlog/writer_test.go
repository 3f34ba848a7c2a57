package decisionlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

var stamp = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return stamp }

func sampleOccurrence() *engine.Occurrence {
	return &engine.Occurrence{
		Anchor: "tool.pre_invoke", SessionID: "s1",
		Facts:          map[string]any{"n": json.Number("12345678901234567890"), "tag": "x"},
		RecentActivity: []string{}, HasRecentActivity: true,
		Content: "secret text", HasContent: true,
		ToolCall: &engine.ToolCall{Name: "read", Arguments: map[string]any{"path": "/etc/passwd"}},
	}
}

func sampleDecision() *engine.Decision {
	return &engine.Decision{Decision: "block", Code: "no_etc", Rule: "acme.no-etc",
		Applied: []string{"acme.audit:fired", "acme.other:passed", "acme.no-etc:fired"}}
}

// logOne writes one line through a Writer and returns it.
func logOne(t *testing.T, opt Options, occ *engine.Occurrence, d *engine.Decision) []byte {
	t.Helper()
	var buf bytes.Buffer
	opt.Now = fixedNow
	opt.Sample = 1
	w := NewWriter(&buf, opt)
	w.Log("sha256:abc", occ, 0, d, Session{})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.Written() != 1 {
		t.Fatalf("written %d lines; want 1", w.Written())
	}
	return buf.Bytes()
}

// TestLineFormat pins a line, member by member, in each content mode.
func TestLineFormat(t *testing.T) {
	sum := sha256.Sum256([]byte("secret text"))
	const head = `{"kind":"decision","time":"2026-12-01T12:00:00Z","bundle":"sha256:abc","session_id":"s1","anchor":"tool.pre_invoke",` +
		`"occurrence":{"anchor":"tool.pre_invoke","session_id":"s1","facts":{"n":12345678901234567890,"tag":"x"},"recent_activity":[],"tool_call":{"name":"read","arguments":{"path":"/etc/passwd"}}`
	const tail = `"decision":"block","code":"no_etc","rule":"acme.no-etc","fired":["acme.audit","acme.no-etc"],"applied":["acme.audit:fired","acme.other:passed","acme.no-etc:fired"]}` + "\n"
	for _, tc := range []struct {
		mode ContentMode
		want string
	}{
		{ContentOmit, head + `},"content":{"mode":"omit","length":11},` + tail},
		{ContentHash, head + `},"content":{"mode":"hash","length":11,"sha256":"` + hex.EncodeToString(sum[:]) + `"},` + tail},
		{ContentFull, head + `,"content":"secret text"},"content":{"mode":"full","length":11},` + tail},
		{"", head + `},"content":{"mode":"omit","length":11},` + tail},
	} {
		got := logOne(t, Options{Content: tc.mode}, sampleOccurrence(), sampleDecision())
		if string(got) != tc.want {
			t.Errorf("mode %q:\n got %s\nwant %s", tc.mode, got, tc.want)
		}
		if tc.mode != ContentFull && bytes.Contains(got, []byte("secret")) {
			t.Errorf("mode %q leaks the content: %s", tc.mode, got)
		}
	}
}

// TestLineWithSessionState: what an occurrence found of its session follows the trace:
// session_began when the store held none of it (a new or forgotten session, with or
// without a shared store), the session's versions, read and written, when it was
// committed to the shared store, session_unavailable when it was answered without
// its session, and session_outcome_unknown, with the version read and the one its
// commit would have left, when it was answered without its session after a commit
// whose outcome is unknown; each reads back as written.
func TestLineWithSessionState(t *testing.T) {
	const head = `{"kind":"decision","time":"2026-12-01T12:00:00Z","bundle":"sha256:abc","session_id":"s1","anchor":"a","occurrence":{"anchor":"a","session_id":"s1"},` +
		`"decision":"none","fired":[],"applied":[]`
	for _, c := range []struct {
		s    Session
		want string
	}{
		{Session{}, ""},
		{Session{Began: true}, `,"session_began":true`},
		{Session{Began: true, State: &SessionState{Read: "", Written: "9f2c"}}, `,"session_began":true,"session_state":{"read":"","written":"9f2c"}`},
		{Session{State: &SessionState{Read: "9f2c", Written: "9f2c"}}, `,"session_state":{"read":"9f2c","written":"9f2c"}`},
		{Session{State: &SessionState{Read: "9f2c", Written: "03ab"}}, `,"session_state":{"read":"9f2c","written":"03ab"}`},
		{Session{Unavailable: true}, `,"session_unavailable":true`},
		{Session{OutcomeUnknown: &SessionState{Read: "9f2c", Written: "03ab"}}, `,"session_outcome_unknown":{"read":"9f2c","written":"03ab"}`},
		{Session{Began: true, OutcomeUnknown: &SessionState{Read: "", Written: "03ab"}}, `,"session_began":true,"session_outcome_unknown":{"read":"","written":"03ab"}`},
	} {
		var buf bytes.Buffer
		w := NewWriter(&buf, Options{Sample: 1, Now: fixedNow})
		w.Log("sha256:abc", &engine.Occurrence{Anchor: "a", SessionID: "s1"}, 0, &engine.Decision{Decision: "none"}, c.s)
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if want := head + c.want + "}\n"; buf.String() != want {
			t.Errorf("%+v:\n got %s\nwant %s", c.s, buf.String(), want)
		}
		e, _, err := ReadLine(bytes.TrimSpace(buf.Bytes()))
		st, unknown := e.Record.SessionState, e.Record.SessionOutcomeUnknown
		if err != nil || e.Record.SessionBegan != c.s.Began || e.Record.SessionUnavailable != c.s.Unavailable || !sameState(st, c.s.State) || !sameState(unknown, c.s.OutcomeUnknown) {
			t.Errorf("%+v read back as began %v, state %+v, outcome unknown %+v, %v", c.s, e.Record.SessionBegan, st, unknown, err)
		}
	}
}

// sameState reports whether two optional session states are both absent or equal.
func sameState(a, b *SessionState) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// TestLineWithoutContentOrActivity: absent members stay absent, so a replay tells "no
// recent_activity" (the session's window) from an empty one.
func TestLineWithoutContentOrActivity(t *testing.T) {
	occ := &engine.Occurrence{Anchor: "turn.start"}
	got := logOne(t, Options{Content: ContentFull}, occ, &engine.Decision{Decision: "allow"})
	want := `{"kind":"decision","time":"2026-12-01T12:00:00Z","bundle":"sha256:abc","session_id":"","anchor":"turn.start","occurrence":{"anchor":"turn.start"},"decision":"allow","fired":[],"applied":[]}` + "\n"
	if string(got) != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

// TestLineReadsBack: Read returns what the writer wrote, the occurrence as the engine
// takes it; without the content the entry says it is not reproducible.
func TestLineReadsBack(t *testing.T) {
	for _, mode := range []ContentMode{ContentOmit, ContentHash, ContentFull} {
		line := logOne(t, Options{Content: mode}, sampleOccurrence(), sampleDecision())
		log, err := Read(bytes.NewReader(line))
		if err != nil || len(log.Entries) != 1 {
			t.Fatalf("mode %s: %d entries, %v", mode, len(log.Entries), err)
		}
		e := log.Entries[0]
		want := sampleOccurrence()
		if mode != ContentFull {
			want.Content, want.HasContent = "", false
		}
		gotJSON, _ := json.Marshal(e.Occ)
		wantJSON, _ := json.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("mode %s: occurrence\n got %s\nwant %s", mode, gotJSON, wantJSON)
		}
		if e.Record.Reproducible() != (mode == ContentFull) {
			t.Errorf("mode %s: Reproducible %v", mode, e.Record.Reproducible())
		}
		if e.Line != 1 || e.Record.Decision != "block" || e.Record.Rule != "acme.no-etc" || strings.Join(e.Record.Applied, " ") != "acme.audit:fired acme.other:passed acme.no-etc:fired" {
			t.Errorf("mode %s: record %+v", mode, e.Record)
		}
	}
}

// TestSamplingIsPerSession: a session is always in or always out; rate 0 logs none,
// rate 1 all, and a rate in between about that fraction of sessions.
func TestSamplingIsPerSession(t *testing.T) {
	in := 0
	const sessions = 10000
	for i := range sessions {
		s := fmt.Sprintf("session-%d", i)
		first := Sampled(s, 0.25)
		for range 3 {
			if Sampled(s, 0.25) != first {
				t.Fatalf("session %s sampled differently on a second call", s)
			}
		}
		if first {
			in++
		}
		if !Sampled(s, 1) || Sampled(s, 0) {
			t.Fatalf("session %s: rate 1 must log it and rate 0 must not", s)
		}
		if first && !Sampled(s, 0.5) {
			t.Fatalf("session %s is in at 0.25 but out at 0.5: a higher rate must keep every session a lower one keeps", s)
		}
	}
	if in < 2300 || in > 2700 {
		t.Errorf("rate 0.25 sampled %d of %d sessions", in, sessions)
	}

	var buf bytes.Buffer
	w := NewWriter(&buf, Options{Sample: 0.25, Now: fixedNow})
	for i := range 200 {
		for j := range 5 {
			w.Log("d", &engine.Occurrence{Anchor: "a", SessionID: fmt.Sprintf("session-%d", i), Facts: map[string]any{"j": json.Number(fmt.Sprint(j))}}, 0, &engine.Decision{Decision: "allow"}, Session{})
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	perSession := map[string]int{}
	for _, e := range log.Entries {
		perSession[e.Record.Session]++
	}
	for s, n := range perSession {
		if n != 5 || !Sampled(s, 0.25) {
			t.Errorf("session %s: %d lines (sampled %v); a sampled session is logged whole", s, n, Sampled(s, 0.25))
		}
	}
	if len(perSession) == 0 {
		t.Error("no session was sampled at 0.25 out of 200")
	}
}

// blockingWriter blocks every Write until released.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// TestFullBufferDrops: with the destination stalled, Log returns at once, the lines
// beyond the buffer are dropped and counted, and the buffered ones are written once
// the destination moves again.
func TestFullBufferDrops(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	w := NewWriter(bw, Options{Sample: 1, Buffer: 4})
	occ, d := sampleOccurrence(), sampleDecision()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			w.Log("d", occ, 0, d, Session{})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Log blocked on a stalled destination")
	}
	// At most the buffer plus the one line the goroutine is writing got in.
	if dropped := w.Dropped(); dropped < 100-5 || dropped > 100-4 {
		t.Errorf("dropped %d of 100 lines with a buffer of 4", dropped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := w.Close(ctx); !errors.Is(err, ErrNotDrained) {
		t.Errorf("Close on a stalled destination: %v; want ErrNotDrained", err)
	}
	cancel()
	close(bw.release)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := w.Written() + w.Dropped(); got != 100 {
		t.Errorf("written %d + dropped %d = %d; want 100", w.Written(), w.Dropped(), got)
	}
	if n := bytes.Count(bw.buf.Bytes(), []byte("\n")); uint64(n) != w.Written() {
		t.Errorf("%d lines reached the destination; Written says %d", n, w.Written())
	}
}

// TestBufferBoundInBytes: with the destination stalled, the lines waiting keep their
// occurrences, at most BufferBytes of them as Log is told: a line that would pass it is
// dropped and counted, one over it alone is kept, and the bytes are given back as the
// lines are written.
func TestBufferBoundInBytes(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	w := NewWriter(bw, Options{Sample: 1, Buffer: 100, BufferBytes: 1000})
	occ, d := sampleOccurrence(), sampleDecision()
	w.Log("d", occ, 5000, d, Session{}) // alone: kept, over the bound
	w.Log("d", occ, 1, d, Session{})    // dropped: the bound is passed
	if w.Dropped() != 1 {
		t.Fatalf("dropped %d lines; want the second, with 5,000 bytes waiting under a bound of 1,000", w.Dropped())
	}
	close(bw.release)
	testpoll.Until(t, 10*time.Second, time.Millisecond, "the first line written", func() bool { return w.Written() == 1 })
	for range 3 {
		w.Log("d", occ, 300, d, Session{})
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.Written() != 4 || w.Dropped() != 1 || w.held.Load() != 0 {
		t.Errorf("written %d, dropped %d, %d bytes held; want 4, 1, 0", w.Written(), w.Dropped(), w.held.Load())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestFailingDestination: a destination that refuses every write is counted and
// reported, sparingly, and Log goes on returning.
func TestFailingDestination(t *testing.T) {
	var reported []uint64
	w := NewWriter(failingWriter{}, Options{Sample: 1, Buffer: 200, OnWriteError: func(err error, n uint64) {
		if err.Error() != "disk full" {
			t.Errorf("reported %v", err)
		}
		reported = append(reported, n)
	}})
	for range 150 {
		w.Log("d", sampleOccurrence(), 0, sampleDecision(), Session{})
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.WriteFailures() != 150 || w.Written() != 0 {
		t.Errorf("failures %d, written %d; want 150, 0", w.WriteFailures(), w.Written())
	}
	if fmt.Sprint(reported) != "[1 10 100]" {
		t.Errorf("reported at failures %v; want [1 10 100]", reported)
	}
}

func TestParseContentMode(t *testing.T) {
	for _, s := range []string{"omit", "hash", "full"} {
		if m, err := ParseContentMode(s); err != nil || string(m) != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseContentMode("all"); err == nil {
		t.Error("all: accepted")
	}
}

// TestLogKeepsTheDecisionAsItWas: the line is built later, in the background, yet
// says what the decision was when Log was called, even if its lists are reused.
func TestLogKeepsTheDecisionAsItWas(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	w := NewWriter(bw, Options{Sample: 1})
	d := sampleDecision()
	w.Log("d", sampleOccurrence(), 0, d, Session{})
	d.Decision, d.Rule, d.Applied[0] = "none", "", "reused"
	close(bw.release)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := Read(&bw.buf)
	if err != nil || len(log.Entries) != 1 {
		t.Fatalf("%v %d", err, len(log.Entries))
	}
	if r := log.Entries[0].Record; r.Decision != "block" || r.Rule != "acme.no-etc" || r.Applied[0] != "acme.audit:fired" {
		t.Errorf("line %+v", r)
	}
}
