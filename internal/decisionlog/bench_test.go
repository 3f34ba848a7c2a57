package decisionlog

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkLog is what the decision log adds to a request: the sampling hash and, for
// a sampled session, a copy of the decision's trace and a channel send (with the
// session's versions when it is shared, copied into the queued line). The writer's
// goroutine is not started; the benchmark takes each line off the channel itself, so
// the figure is the request's part (plus that receive), not the line's building and
// writing (BenchmarkWriteLine), which happens in the background.
func BenchmarkLog(b *testing.B) {
	in, out := "", ""
	for i := 0; in == "" || out == ""; i++ {
		if s := fmt.Sprintf("s%d", i); Sampled(s, 0.1) {
			in = s
		} else {
			out = s
		}
	}
	for _, c := range []struct {
		name, session string
		state         *SessionState
	}{{"sampled", in, nil}, {"sampled-shared", in, &SessionState{Read: "6b1f0c2e9a4d7e3f5a8b2c1d", Written: "0d9e8f7a6b5c4d3e2f1a0b9c"}}, {"not-sampled", out, nil}} {
		b.Run(c.name, func(b *testing.B) {
			w := &Writer{opt: Options{Sample: 0.1, Now: time.Now}, ch: make(chan pending, 1)}
			occ, d := sampleOccurrence(), sampleDecision()
			occ.SessionID = c.session
			b.ReportAllocs()
			for b.Loop() {
				w.Log("sha256:abc", occ, 0, d, Session{State: c.state})
				select {
				case <-w.ch:
				default:
				}
			}
			if w.Dropped() != 0 {
				b.Fatalf("%d lines dropped", w.Dropped())
			}
		})
	}
}

// BenchmarkWriteLine is the background goroutine's work per line: building and
// encoding it.
func BenchmarkWriteLine(b *testing.B) {
	occ, d := sampleOccurrence(), sampleDecision()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MarshalLine(NewRecord(stamp, "sha256:abc", ContentHash, occ, d)); err != nil {
			b.Fatal(err)
		}
	}
}
