package sidecar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/occurrence"
	"github.com/oar-operator/oar-operator/internal/sidecar/metrics"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

// Answer is the body of a successful POST /v1/evaluate: the decision in the shapes of
// section 10.2 (decision, code, rule, copy, advisories, transforms, content, applied,
// on_fire, events, skipped_transforms, and counters and failures when there are any)
// warnings when there are any, and the digest of the bundle that answered.
type Answer struct {
	*engine.Decision
	// Warnings name what the answer is right about but the host probably did not mean.
	Warnings []Warning `json:"warnings,omitempty"`
	Bundle   string    `json:"bundle"`
}

// Warning is one warning of an answer: the clause that makes the answer right, the
// occurrence member concerned, its value, and what is probably wrong.
type Warning struct {
	Clause  string `json:"clause"`
	Field   string `json:"field"`
	Value   string `json:"value"`
	Message string `json:"message"`
}

// undeclaredAnchor warns of an occurrence at an anchor the served capability does not
// declare: it selects nothing ([OAR-SEL-7]), as it must, but in an agent host it is
// usually a misspelling that would otherwise pass silently.
func undeclaredAnchor(anchor string) Warning {
	return Warning{Clause: "OAR-SEL-7", Field: "anchor", Value: diag.Truncate(anchor),
		Message: "the served capability does not declare this anchor (neither the local anchor of a supported core anchor nor a host-native anchor); no rule selects it"}
}

// evaluate answers one occurrence with the bundle served when the request arrived.
func (s *Sidecar) evaluate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sv := s.source.Current()
	if sv == nil {
		s.metrics.Rejected(metrics.RejectNotReady)
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusServiceUnavailable, Problem{Error: "no bundle is loaded yet; GET /v1/bundle shows why"})
		return
	}
	digest := sv.Digest()
	sd := s.servedDigest(sv)
	w.Header()[digestKey] = sd.value
	defer s.recoverEvaluation(w, digest)

	// Room for the body as declared (as the limit allows, when it is not), then for
	// what it decodes to (requestBudget).
	declared := r.ContentLength
	if declared < 0 || declared > s.opt.MaxBodyBytes {
		declared = s.opt.MaxBodyBytes
	}
	reading, err := s.requests.read(r.Context(), declared)
	if err != nil {
		return // the client went away while the request waited
	}
	sc := scratches.Get().(*scratch)
	// A body that stalls gives its room back once the deadline passes.
	setReadDeadline(w, time.Now().Add(s.opt.BodyReadTimeout))
	body, err := readBody(sc.body[:0], w, r, s.opt.MaxBodyBytes)
	sc.body = pooled(body)
	if err == nil {
		setReadDeadline(w, time.Time{})
	}
	if err != nil {
		s.requests.doneReading(reading)
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			s.metrics.Rejected(metrics.RejectTooLarge)
			writeProblem(w, http.StatusRequestEntityTooLarge, Problem{Error: fmt.Sprintf("the occurrence exceeds %d bytes, the limit --max-body-bytes sets", tooLarge.Limit), Bundle: digest})
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The connection is closed after the answer: net/http would otherwise wait
			// for the rest of the body to reuse it.
			s.metrics.Rejected(metrics.RejectMalformed)
			w.Header().Set("Connection", "close")
			writeProblem(w, http.StatusRequestTimeout, Problem{Error: fmt.Sprintf("the request body did not arrive within %s", s.opt.BodyReadTimeout), Bundle: digest})
		default:
			s.metrics.Rejected(metrics.RejectMalformed)
			writeProblem(w, http.StatusBadRequest, Problem{Error: "reading the request body: " + err.Error(), Bundle: digest})
		}
		scratches.Put(sc)
		return
	}
	// The body is charged what it becomes before it is decoded.
	size := occurrence.HeapBytes(body)
	evaluating, err := s.requests.evaluate(r.Context(), size)
	s.requests.doneReading(reading)
	if err != nil {
		scratches.Put(sc)
		return // the client went away while the request waited
	}
	defer s.requests.doneEvaluating(evaluating)
	occ, errs := occurrence.Decode(body, occurrence.HostMembers)
	if errs != nil {
		s.metrics.Rejected(metrics.RejectMalformed)
		writeProblem(w, http.StatusBadRequest, problemOf(errs, digest))
		scratches.Put(sc)
		return
	}
	if n := len(occ.SessionID); n > MaxSessionIDBytes {
		s.metrics.Rejected(metrics.RejectMalformed)
		writeProblem(w, http.StatusBadRequest, problemOf(diag.List{diag.New("OAR-CONF-18", "session_id",
			"%d bytes, over the limit of %d that bounds what one session holds in memory", n, MaxSessionIDBytes)}, digest))
		scratches.Put(sc)
		return
	}
	d := s.evaluateInSession(sv, occ, size, &sc.decision)
	a := Answer{Decision: d, Bundle: digest}
	anchor := occ.Anchor
	if !sv.Loaded.Capability.DeclaresAnchor(anchor) {
		a.Warnings = []Warning{undeclaredAnchor(anchor)}
		s.metrics.UndeclaredAnchor(anchor)
		anchor = metrics.UndeclaredAnchorLabel
	}
	sc.answer = pooled(writeAnswer(w, sc.answer[:0], a, sd.end))
	s.metrics.Evaluated(anchor, d.Decision, time.Since(start))
	// The answer is written: nothing holds the decision any more, and the next request
	// builds its own in the same storage.
	scratches.Put(sc)
}

// scratch is the storage a request reuses from an earlier one: the body read, the
// decision built (engine.EvaluateInto) and the answer encoded, so an answer allocates
// little beyond its occurrence, in one pool rather than one each. The scratch of a
// request that panicked is not returned: its decision may be half built.
type scratch struct {
	body     []byte
	answer   []byte
	decision engine.DecisionBuffer
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// pooled returns b to keep in a scratch, or nil when it has grown past maxPooled: one
// huge request does not pin its memory.
func pooled(b []byte) []byte {
	if cap(b) > maxPooled {
		return nil
	}
	return b
}

// readBody appends r's body to b, at most limit bytes: what reading it through
// http.MaxBytesReader gives, the same bytes and errors, without a reader allocated per
// request. A body over the limit returns *http.MaxBytesError and has the server close
// the connection after the answer rather than read the rest (closeAfterTooLarge). b is
// grown once to hold a body of the length the request declares, up to what a pooled
// buffer holds, and a byte more, so net/http's body is read in one call that also
// reports its end; a declared length is not trusted further before the bytes arrive.
func readBody(b []byte, w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	left := max(limit, 0)
	if n := r.ContentLength; n > 0 {
		b = slices.Grow(b, int(min(n, left, maxPooled))+1)
	}
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, bytes.MinRead)
		}
		p := b[len(b):cap(b)]
		if int64(len(p))-1 > left {
			p = p[:left+1]
		}
		n, err := r.Body.Read(p)
		if int64(n) > left {
			closeAfterTooLarge(w)
			return b[:len(b)+int(left)], &http.MaxBytesError{Limit: limit}
		}
		left -= int64(n)
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// setReadDeadline sets the read deadline of w's connection, as
// http.ResponseController does, unwrapping w as it does, without allocating: a
// writer that cannot set one (a test's) is left as it is.
func setReadDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch rw := w.(type) {
		case interface{ SetReadDeadline(time.Time) error }:
			_ = rw.SetReadDeadline(t)
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = rw.Unwrap()
		default:
			return
		}
	}
}

// closeAfterTooLarge tells net/http's server that a request's body was over its limit,
// so that it closes the connection after the answer, as it does when
// http.MaxBytesReader finds a body too large: it is told the same way, by such a reader
// over one byte and a limit of none.
func closeAfterTooLarge(w http.ResponseWriter) {
	var one [1]byte
	_, _ = http.MaxBytesReader(w, io.NopCloser(bytes.NewReader(one[:])), 0).Read(one[:])
}

// servedDigest is the DigestHeader value of one served bundle and the end of its
// answers (appendAnswerEnd), made once per bundle and shared by its answers (net/http
// only reads header values).
type servedDigest struct {
	sv    *reload.Served
	value []string
	end   []byte
}

// digestKey is DigestHeader in net/http's canonical form, so setting it does not
// canonicalize (and allocate) per request.
var digestKey = http.CanonicalHeaderKey(DigestHeader)

func (s *Sidecar) servedDigest(sv *reload.Served) *servedDigest {
	if d := s.digest.Load(); d != nil && d.sv == sv {
		return d
	}
	d := &servedDigest{sv: sv, value: []string{sv.Digest()}, end: appendAnswerEnd(nil, sv.Digest())}
	s.digest.Store(d)
	return d
}

// recoverEvaluation turns a failure the engine should never have, a panic included,
// into a 500 whose JSON says what happened, instead of a dropped connection and a stack
// trace. It is deferred by evaluate.
func (s *Sidecar) recoverEvaluation(w http.ResponseWriter, digest string) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	err, ok := v.(error)
	if !ok {
		err = fmt.Errorf("%v", v)
	}
	s.internalError(w, digest, fmt.Errorf("panic: %w", err))
}

func (s *Sidecar) internalError(w http.ResponseWriter, digest string, err error) {
	s.opt.Log.Error(err, "evaluation failed", "bundle", digest)
	writeProblem(w, http.StatusInternalServerError, Problem{Error: "the engine could not evaluate the occurrence: " + err.Error(), Bundle: digest})
}
