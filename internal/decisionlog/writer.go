package decisionlog

import (
	"context"
	"errors"
	"hash/fnv"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// DefaultBuffer is how many lines a Writer holds for its background goroutine when
// Options give no buffer: at a thousand evaluations a second, about a second of a
// stalled destination before lines are dropped.
const DefaultBuffer = 1024

// DefaultBufferBytes is how many bytes of heap the occurrences of the lines a Writer
// holds may take when Options give no bound: what the sidecar's requests being
// evaluated may take by default (sidecar.DefaultMaxRequestBytes).
const DefaultBufferBytes = 16 << 20

// Options configure a Writer.
type Options struct {
	// Content is how much of each occurrence's content a line keeps (ContentOmit when
	// empty).
	Content ContentMode
	// Sample is the fraction of sessions logged, from 0 (none) to 1 (all); Sampled
	// says which.
	Sample float64
	// Buffer is how many lines wait for the destination before more are dropped
	// (DefaultBuffer when not positive), and BufferBytes how many bytes of heap
	// their occurrences may take, as Log is told (DefaultBufferBytes when not
	// positive): a line kept waiting keeps its decoded occurrence, which can take 50
	// times its request's body.
	Buffer      int
	BufferBytes int64
	// Now stamps the lines (time.Now when nil).
	Now func() time.Time
	// OnWriteError is told of failed writes: the first, and then the 10th, 100th,
	// 1000th..., so a destination that stays broken is reported without flooding the
	// log. Nil: not reported (the count is in WriteFailures).
	OnWriteError func(err error, failures uint64)

	// maxLine is the longest line written whole (MaxLineBytes); tests lower it.
	maxLine int
}

// Writer writes the decision log. Log never blocks and never fails: lines are built
// and written by a background goroutine, from a bounded buffer; a line that finds the
// buffer full is dropped and counted. It is safe for concurrent use.
type Writer struct {
	w   io.Writer
	opt Options
	ch  chan pending

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	written, dropped, failed, tooLong atomic.Uint64
	// held is the bytes of the occurrences of the lines waiting, as Log was told.
	held atomic.Int64
}

// pending is one evaluated occurrence waiting to be written, with what the line keeps
// of its decision.
type pending struct {
	at                   time.Time
	bundle               string
	occ                  *engine.Occurrence
	size                 int64
	decision, code, rule string
	applied              []string
	// state is the session's versions in the shared store, when shared is set;
	// began and unavailable are Session's; outcomeUnknown Session's OutcomeUnknown,
	// when unknown is set.
	state, outcomeUnknown               SessionState
	shared, began, unavailable, unknown bool
}

// NewWriter starts a writer of lines to w. Close stops it.
func NewWriter(w io.Writer, opt Options) *Writer {
	if opt.Content == "" {
		opt.Content = ContentOmit
	}
	if opt.Buffer <= 0 {
		opt.Buffer = DefaultBuffer
	}
	if opt.BufferBytes <= 0 {
		opt.BufferBytes = DefaultBufferBytes
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.maxLine <= 0 {
		opt.maxLine = MaxLineBytes
	}
	lw := &Writer{w: w, opt: opt, ch: make(chan pending, opt.Buffer), stop: make(chan struct{}), done: make(chan struct{})}
	go lw.run()
	return lw
}

// Sampled reports whether the writer logs the session: whether the session's hash,
// as a fraction of the hash space, is below the sample rate. The same session is
// always in or always out, in every replica and across restarts.
func (lw *Writer) Sampled(session string) bool { return Sampled(session, lw.opt.Sample) }

// Sampled reports whether a session is logged at the given rate (see Writer.Sampled).
func Sampled(session string, rate float64) bool {
	switch {
	case rate >= 1:
		return true
	case rate <= 0:
		return false
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(session))
	// The top 53 bits, as a fraction in [0, 1) a float64 holds exactly.
	return float64(h.Sum64()>>11)/(1<<53) < rate
}

// Log queues the line of one evaluated occurrence of a sampled session; it returns at
// once. size is the heap occ takes (what the sidecar charged its request), which the
// line keeps until it is written. It copies what it keeps of d, whose lists may be
// reused, and of s, what the occurrence found of its session; occ must not change
// afterwards: the line is built from it later. The line's time is taken here, so a
// caller that logs a session's occurrences in the order they took effect (under the
// session's lock) gets lines in that order. A line that finds the buffer full, in
// lines or in bytes, is dropped and counted.
func (lw *Writer) Log(bundle string, occ *engine.Occurrence, size int64, d *engine.Decision, s Session) {
	if !lw.Sampled(occ.SessionID) {
		return
	}
	if held := lw.held.Add(size); held > lw.opt.BufferBytes && held != size {
		// Over the bound, unless it is the only line waiting: one line always fits.
		lw.held.Add(-size)
		lw.dropped.Add(1)
		return
	}
	p := pending{at: lw.opt.Now(), bundle: bundle, occ: occ, size: size, decision: d.Decision, code: d.Code, rule: d.Rule, applied: slices.Clone(d.Applied)}
	p.began, p.unavailable = s.Began, s.Unavailable
	if s.State != nil {
		p.state, p.shared = *s.State, true
	}
	if s.OutcomeUnknown != nil {
		p.outcomeUnknown, p.unknown = *s.OutcomeUnknown, true
	}
	select {
	case lw.ch <- p:
	default:
		lw.held.Add(-size)
		lw.dropped.Add(1)
	}
}

func (lw *Writer) run() {
	defer close(lw.done)
	for {
		select {
		case p := <-lw.ch:
			lw.write(p)
		case <-lw.stop:
			for {
				select {
				case p := <-lw.ch:
					lw.write(p)
				default:
					return
				}
			}
		}
	}
}

// write writes one line, in one Write call so lines sharing a destination with other
// writers (publish_event records on stdout) never interleave.
func (lw *Writer) write(p pending) {
	defer lw.held.Add(-p.size)
	d := engine.Decision{Decision: p.decision, Code: p.code, Rule: p.rule, Applied: p.applied}
	r := NewRecord(p.at, p.bundle, lw.opt.Content, p.occ, &d)
	r.SessionBegan, r.SessionUnavailable = p.began, p.unavailable
	if p.shared {
		r.SessionState = &p.state
	}
	if p.unknown {
		r.SessionOutcomeUnknown = &p.outcomeUnknown
	}
	line, err := MarshalLine(r)
	if err == nil && len(line)-1 > lw.opt.maxLine {
		line, err = marshalTooLong(r, len(line)-1)
		lw.tooLong.Add(1)
	}
	if err == nil {
		_, err = lw.w.Write(line)
	}
	if err != nil {
		n := lw.failed.Add(1)
		if lw.opt.OnWriteError != nil && isPowerOfTen(n) {
			lw.opt.OnWriteError(err, n)
		}
		return
	}
	lw.written.Add(1)
}

func isPowerOfTen(n uint64) bool {
	for n%10 == 0 && n > 1 {
		n /= 10
	}
	return n == 1
}

// ErrNotDrained is Close's error when ctx ended before the buffered lines were written.
var ErrNotDrained = errors.New("decisionlog: lines were still buffered when the writer was closed")

// Close writes the lines already buffered and stops the writer, waiting until ctx ends
// at most. Lines logged after Close are never written.
func (lw *Writer) Close(ctx context.Context) error {
	lw.closeOnce.Do(func() { close(lw.stop) })
	select {
	case <-lw.done:
		return nil
	case <-ctx.Done():
		return ErrNotDrained
	}
}

// Written returns how many lines were written.
func (lw *Writer) Written() uint64 { return lw.written.Load() }

// TooLong returns how many occurrences were logged as a too_long marker, their lines
// being longer than MaxLineBytes.
func (lw *Writer) TooLong() uint64 { return lw.tooLong.Load() }

// Dropped returns how many lines were dropped because the buffer was full.
func (lw *Writer) Dropped() uint64 { return lw.dropped.Load() }

// WriteFailures returns how many lines the destination refused.
func (lw *Writer) WriteFailures() uint64 { return lw.failed.Load() }
