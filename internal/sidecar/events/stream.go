// Package events is the engine sidecar's publish_event stream ([OAR-FIRE-7]): every
// record is written as one JSON line to a writer (the
// sidecar's stdout, which the container runtime collects) and fanned out to the
// subscribers of GET /v1/events.
//
// The writer is the record of truth: a write it refuses is a side-effect that cannot be
// applied, which the engine routes to the rule's on_error ([OAR-FIRE-9]). So is a write
// it does not finish within the stream's write timeout (a log collector that stopped
// reading the sidecar's stdout): the evaluation goes on without waiting longer, and
// while that write is still pending, later records are refused at once. A record so
// refused may still reach the writer once it resumes. Subscribers are best effort: each
// has a bounded buffer, and one that falls behind is dropped (its channel closes and
// Dropped reports it), so a slow reader never blocks an evaluation.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// DefaultBuffer is a subscriber's buffer when NewStream is given none.
const DefaultBuffer = 256

// DefaultWriteTimeout bounds a write to the writer when NewStream is given no timeout.
const DefaultWriteTimeout = 5 * time.Second

// ErrClosed is returned by Subscribe after Close.
var ErrClosed = errors.New("events: the stream is closed")

// Record is one published event as the stream carries it: when, which bundle's rule,
// and the engine's event.
type Record struct {
	Time   time.Time `json:"time"`
	Bundle string    `json:"bundle"`
	engine.Event
}

// MarshalJSON writes the record as encoding/json would, except that its strings keep a
// lone surrogate code point ([OAR-FACT-23]) by its escape (codepoint.AppendJSON), as the
// answer and the decision log do, rather than making it U+FFFD.
func (r Record) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 160), `{"time":`...)
	b, err := r.Time.AppendText(append(b, '"'))
	if err != nil {
		return nil, err
	}
	b = append(b, `","bundle":`...)
	b = codepoint.AppendJSON(b, r.Bundle)
	b = codepoint.AppendJSON(append(b, `,"rule":`...), r.Rule)
	b = codepoint.AppendJSON(append(b, `,"anchor":`...), r.Anchor)
	b = codepoint.AppendJSON(append(b, `,"effect":`...), r.Effect)
	if r.Session != "" {
		b = codepoint.AppendJSON(append(b, `,"session_id":`...), r.Session)
	}
	return append(b, '}'), nil
}

// Stream writes records and fans them out. It is safe for concurrent use.
type Stream struct {
	w       io.Writer
	buffer  int
	timeout time.Duration
	now     func() time.Time
	// writes hands each line to the goroutine writing to w, which sets busySince (Unix
	// nanoseconds) while a write is under way, so a record can be refused rather than
	// wait on a write that will not finish.
	writes    chan write
	busySince atomic.Int64

	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	closed bool
	// The figures /metrics reads are atomics, so a scrape never waits for the lock,
	// which a write to a stalled stdout holds.
	subscribers atomic.Int64
	dropped     atomic.Uint64
}

// write is a line handed to the writing goroutine and where its outcome goes.
type write struct {
	line []byte
	done chan written
}

// written is the outcome of a write: its error, or what the writer panicked with,
// which writeLine panics with again in the publishing goroutine, as if it had written
// the line itself.
type written struct {
	err      error
	panicked any
}

// NewStream returns a stream writing JSON lines to w, each within writeTimeout
// (DefaultWriteTimeout when not positive), giving each subscriber a buffer of the given
// number of records (DefaultBuffer when not positive). The goroutine writing to w lives
// as long as the process: records published during shutdown are still written.
func NewStream(w io.Writer, buffer int, writeTimeout time.Duration) *Stream {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	if writeTimeout <= 0 {
		writeTimeout = DefaultWriteTimeout
	}
	s := &Stream{w: w, buffer: buffer, timeout: writeTimeout, now: time.Now, writes: make(chan write), subs: map[*Subscription]struct{}{}}
	go s.writeLines()
	return s
}

func (s *Stream) writeLines() {
	for wr := range s.writes {
		s.busySince.Store(time.Now().UnixNano())
		wr.done <- s.writeOne(wr.line)
		s.busySince.Store(0)
	}
}

func (s *Stream) writeOne(line []byte) (w written) {
	defer func() {
		if p := recover(); p != nil {
			w.panicked = p
		}
	}()
	_, w.err = s.w.Write(line)
	return w
}

// writeLine writes line to w within the timeout, refusing it at once while a write
// that has outlasted the timeout is still under way.
func (s *Stream) writeLine(line []byte) error {
	if since := s.busySince.Load(); since != 0 && time.Since(time.Unix(0, since)) > s.timeout {
		return fmt.Errorf("the writer has not finished a write for over %s", s.timeout)
	}
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	wr := write{line: line, done: make(chan written, 1)}
	select {
	case s.writes <- wr:
	case <-t.C:
		return fmt.Errorf("the writer has not finished a write for over %s", s.timeout)
	}
	select {
	case w := <-wr.done:
		if w.panicked != nil {
			panic(w.panicked)
		}
		return w.err
	case <-t.C:
		return fmt.Errorf("the write did not finish within %s", s.timeout)
	}
}

// Sink returns the engine.EventSink that publishes records of the given bundle.
func (s *Stream) Sink(bundle string) engine.EventSink { return sink{s: s, bundle: bundle} }

type sink struct {
	s      *Stream
	bundle string
}

// Publish implements engine.EventSink.
func (k sink) Publish(e engine.Event) error {
	return k.s.publish(Record{Time: k.s.now().UTC(), Bundle: k.bundle, Event: e})
}

func (s *Stream) publish(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("events: encoding the record: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// One write per line, under the lock, so concurrent records never interleave.
	if err := s.writeLine(append(line, '\n')); err != nil {
		return fmt.Errorf("events: writing the record: %w", err)
	}
	for sub := range s.subs {
		select {
		case sub.ch <- line:
		default:
			sub.dropped = true
			s.dropped.Add(1)
			s.detach(sub)
		}
	}
	return nil
}

// Subscription receives records until it is cancelled, dropped or the stream closes.
type Subscription struct {
	s  *Stream
	ch chan []byte
	// dropped is set, under the stream's lock, before ch closes for being full.
	dropped bool
}

// Subscribe adds a subscriber.
func (s *Stream) Subscribe() (*Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	sub := &Subscription{s: s, ch: make(chan []byte, s.buffer)}
	s.subs[sub] = struct{}{}
	s.subscribers.Add(1)
	return sub, nil
}

// C delivers each record's JSON; it closes when the subscription ends.
func (sub *Subscription) C() <-chan []byte { return sub.ch }

// Dropped reports whether the subscription ended because its buffer was full. Read it
// after C has closed.
func (sub *Subscription) Dropped() bool {
	sub.s.mu.Lock()
	defer sub.s.mu.Unlock()
	return sub.dropped
}

// Cancel ends the subscription; it is safe to call more than once.
func (sub *Subscription) Cancel() {
	sub.s.mu.Lock()
	defer sub.s.mu.Unlock()
	sub.s.detach(sub)
}

// detach removes sub and closes its channel, once. The caller holds s.mu.
func (s *Stream) detach(sub *Subscription) {
	if _, ok := s.subs[sub]; ok {
		delete(s.subs, sub)
		s.subscribers.Add(-1)
		close(sub.ch)
	}
}

// Close ends every subscription and refuses new ones. Records are still written to the
// writer, so evaluations that finish during shutdown keep their events.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for sub := range s.subs {
		s.detach(sub)
	}
}

// Subscribers returns the number of current subscribers.
func (s *Stream) Subscribers() int { return int(s.subscribers.Load()) }

// Dropped returns how many subscribers were dropped for falling behind.
func (s *Stream) Dropped() uint64 { return s.dropped.Load() }
