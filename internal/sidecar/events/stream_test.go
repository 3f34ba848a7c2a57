package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

var ev = engine.Event{Rule: "acme.ops/COUNT", Anchor: "tool.pre_invoke", Effect: "warn", Session: "s1"}

func fixedStream(w *bytes.Buffer, buffer int) *Stream {
	s := NewStream(w, buffer, 0)
	s.now = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	return s
}

// TestJSONLines: each record is one JSON line naming the bundle, in publish order.
func TestJSONLines(t *testing.T) {
	var out bytes.Buffer
	s := fixedStream(&out, 0)
	sink := s.Sink("sha256:abc")
	for range 2 {
		if err := sink.Publish(ev); err != nil {
			t.Fatal(err)
		}
	}
	line := `{"time":"2025-01-02T03:04:05Z","bundle":"sha256:abc","rule":"acme.ops/COUNT","anchor":"tool.pre_invoke","effect":"warn","session_id":"s1"}` + "\n"
	if out.String() != line+line {
		t.Errorf("got %q", out.String())
	}
}

// TestLoneSurrogatesKept: a session_id or a rule holding a lone surrogate code point
// ([OAR-FACT-23]) is written by its escape, as the answer and the decision log write
// it, where encoding/json would make it U+FFFD and so another session.
func TestLoneSurrogatesKept(t *testing.T) {
	var out bytes.Buffer
	s := fixedStream(&out, 0)
	odd := engine.Event{Rule: "acme.ops/ODD\xed\xb0\x80", Anchor: "tool.pre_invoke", Effect: "warn", Session: "s\xed\xa0\x80<&>"}
	if err := s.Sink("sha256:abc").Publish(odd); err != nil {
		t.Fatal(err)
	}
	line := `{"time":"2025-01-02T03:04:05Z","bundle":"sha256:abc","rule":"acme.ops/ODD\udc00","anchor":"tool.pre_invoke","effect":"warn","session_id":"s\ud800\u003c\u0026\u003e"}` + "\n"
	if out.String() != line {
		t.Errorf("got  %s\nwant %s", out.String(), line)
	}
	if err := s.Sink("").Publish(engine.Event{Rule: "r", Anchor: "a", Effect: "warn"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimPrefix(out.String(), line); got != `{"time":"2025-01-02T03:04:05Z","bundle":"","rule":"r","anchor":"a","effect":"warn"}`+"\n" {
		t.Errorf("a record without a session: %s", got)
	}
}

// TestRefusedWrite is [OAR-FIRE-9]'s "an event stream that refuses the write": the
// error reaches the engine, and subscribers are not sent a record that was not written.
func TestRefusedWrite(t *testing.T) {
	s := NewStream(refusing{}, 0, 0)
	sub, err := s.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sink("d").Publish(ev); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Publish: %v", err)
	}
	if len(sub.C()) != 0 {
		t.Error("a subscriber received an unwritten record")
	}
}

// TestStalledWriter: a writer that stops taking writes (stdout no one reads) fails a
// record after the write timeout, so the rule goes to its on_error ([OAR-FIRE-9])
// instead of the evaluation waiting for good; while that write is pending, the next
// record is refused at once; once the writer resumes, records are written again.
func TestStalledWriter(t *testing.T) {
	const timeout = 50 * time.Millisecond
	w := &stalling{release: make(chan struct{})}
	s := NewStream(w, 0, timeout)
	start := time.Now()
	if err := s.Sink("d").Publish(ev); err == nil || !strings.Contains(err.Error(), "did not finish within") {
		t.Fatalf("Publish to a stalled writer: %v", err)
	}
	if waited := time.Since(start); waited < timeout {
		t.Errorf("failed after %s, before the timeout", waited)
	}
	start = time.Now()
	if err := s.Sink("d").Publish(ev); err == nil || !strings.Contains(err.Error(), "has not finished a write") {
		t.Errorf("Publish while the stalled write is pending: %v", err)
	}
	if waited := time.Since(start); waited > timeout/2 {
		t.Errorf("refused after %s; want at once", waited)
	}
	close(w.release)
	testpoll.Until(t, 5*time.Second, time.Millisecond, "the writer to resume", func() bool { return s.busySince.Load() == 0 })
	if err := s.Sink("d").Publish(ev); err != nil {
		t.Errorf("Publish once the writer resumed: %v", err)
	}
}

// stalling blocks its first write until release is closed.
type stalling struct {
	release chan struct{}
	once    sync.Once
}

func (w *stalling) Write(p []byte) (int, error) {
	w.once.Do(func() { <-w.release })
	return len(p), nil
}

type refusing struct{}

func (refusing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestFanOutAndDrop: every subscriber gets each record; one whose buffer is full is
// dropped and closed without blocking the publisher; the others keep receiving.
func TestFanOutAndDrop(t *testing.T) {
	var out bytes.Buffer
	s := fixedStream(&out, 2)
	fast, _ := s.Subscribe()
	slow, _ := s.Subscribe()
	sink := s.Sink("d")
	for i := range 3 {
		if err := sink.Publish(ev); err != nil {
			t.Fatal(err)
		}
		<-fast.C() // the fast one keeps up; the slow one never reads
		if i == 1 && s.Subscribers() != 2 {
			t.Fatalf("dropped too early")
		}
	}
	if s.Subscribers() != 1 || s.Dropped() != 1 {
		t.Fatalf("subscribers %d dropped %d, want 1 and 1", s.Subscribers(), s.Dropped())
	}
	var got []Record
	for rec := range slow.C() {
		var r Record
		if err := json.Unmarshal(rec, &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 2 || !slow.Dropped() || fast.Dropped() || got[0].Rule != ev.Rule || got[0].Bundle != "d" {
		t.Errorf("slow subscriber: %d records %+v, dropped %v", len(got), got, slow.Dropped())
	}
	slow.Cancel() // after the drop: harmless
}

// TestClose ends every subscription, refuses new ones, and keeps writing records.
func TestClose(t *testing.T) {
	var out bytes.Buffer
	s := fixedStream(&out, 0)
	sub, _ := s.Subscribe()
	s.Close()
	if _, open := <-sub.C(); open || sub.Dropped() {
		t.Error("a subscription survived Close, or was reported dropped")
	}
	if _, err := s.Subscribe(); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close: %v", err)
	}
	sub.Cancel()
	if err := s.Sink("d").Publish(ev); err != nil || out.Len() == 0 {
		t.Errorf("Publish after Close: %v, %d bytes written", err, out.Len())
	}
}

// blockedWriter is a stdout whose reader has stalled: a Write says it has begun on
// entered and waits for release.
type blockedWriter struct{ entered, release chan struct{} }

func (b blockedWriter) Write(p []byte) (int, error) {
	close(b.entered)
	<-b.release
	return len(p), nil
}

// TestFiguresDoNotWaitForAStalledWriter: while a record's write to stdout blocks (a
// stalled container log pipe), /metrics still reads the subscriber figures.
func TestFiguresDoNotWaitForAStalledWriter(t *testing.T) {
	w := blockedWriter{entered: make(chan struct{}), release: make(chan struct{})}
	s := NewStream(w, 1, 0)
	if _, err := s.Subscribe(); err != nil {
		t.Fatal(err)
	}
	published := make(chan error, 1)
	go func() { published <- s.Sink("sha256:x").Publish(engine.Event{Rule: "a/R"}) }()
	<-w.entered
	read := make(chan struct{})
	go func() {
		for range 100 {
			_, _ = s.Subscribers(), s.Dropped()
		}
		close(read)
	}()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		t.Fatal("reading the figures waited for the blocked write")
	}
	close(w.release)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	if n := s.Subscribers(); n != 1 {
		t.Errorf("%d subscribers, want 1", n)
	}
}
