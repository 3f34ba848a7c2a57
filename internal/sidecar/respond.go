package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// DigestHeader carries the digest of the bundle that answered a request.
const DigestHeader = "X-OAR-Bundle-Digest"

// Problem is every error response's body: a one-line message and, for a malformed
// occurrence, one diagnostic per problem with its clause and field, as every refusal.
type Problem struct {
	Error       string    `json:"error"`
	Diagnostics diag.List `json:"diagnostics,omitempty"`
	// Bundle is the digest of the bundle that judged the request, when one did.
	Bundle string `json:"bundle,omitempty"`
}

// maxProblemDiagnostics is the most diagnostics a Problem lists. An occurrence of a
// megabyte can hold a hundred thousand problems (an unknown member, a step of
// recent_activity that is not a string, each one of its own): listed, they made an
// answer of 75 MB.
const maxProblemDiagnostics = 100

// problemOf makes a Problem of diagnostics, the first one as the message, which counts
// them all; it lists at most maxProblemDiagnostics.
func problemOf(errs diag.List, bundle string) Problem {
	msg := errs[0].Format("")
	switch n := len(errs); {
	case n > maxProblemDiagnostics:
		msg = fmt.Sprintf("%s (and %d more; the first %d are listed)", msg, n-1, maxProblemDiagnostics)
		errs = errs[:maxProblemDiagnostics]
	case n > 1:
		msg = fmt.Sprintf("%s (and %d more)", msg, n-1)
	}
	return Problem{Error: msg, Diagnostics: errs, Bundle: bundle}
}

// contentTypeJSON is shared by every response: net/http never modifies header values.
var contentTypeJSON = []string{"application/json"}

// contentLengths hold the Content-Length header values of the body lengths answers
// have had, each made when first needed and shared by every answer of that length, as
// contentTypeJSON is: a value made per answer was two allocations (the number's text
// and the slice holding it) of the few a request makes. Answers are mostly a few
// hundred bytes to a few kilobytes; a longer one gets a value of its own.
var contentLengths [16 << 10]atomic.Pointer[[1]string]

func contentLength(n int) []string {
	if n >= len(contentLengths) {
		return []string{strconv.Itoa(n)}
	}
	v := contentLengths[n].Load()
	if v == nil {
		v = &[1]string{strconv.Itoa(n)}
		contentLengths[n].Store(v)
	}
	return v[:]
}

// bufferPool recycles the buffers error responses are encoded into; buffers grown past
// maxPooled are left to the collector so one huge response does not pin its memory.
var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooled = 64 << 10

func getBuffer() *bytes.Buffer {
	b := bufferPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		bufferPool.Put(b)
	}
}

// writeJSON writes v as the response body with the given status. HTML characters are
// not escaped: copy text reaches the host as written.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := getBuffer()
	defer putBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// A Problem of one string always encodes.
		buf.Reset()
		status = http.StatusInternalServerError
		_ = enc.Encode(Problem{Error: "encoding the response: " + err.Error()})
	}
	writeBody(w, status, buf.Bytes())
}

// writeAnswer writes an answer with status 200, encoded by appendAnswer into b, its
// end (appendAnswerEnd of a.Bundle) given, and returns the encoding for b's storage to
// be used again.
func writeAnswer(w http.ResponseWriter, b []byte, a Answer, end []byte) []byte {
	b = append(appendAnswerStart(b, a), end...)
	writeBody(w, http.StatusOK, b)
	return b
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = contentLength(len(body))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeProblem(w http.ResponseWriter, status int, p Problem) { writeJSON(w, status, p) }

// only restricts a handler to one method; any other gets 405 naming the allowed one.
func only(method string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeProblem(w, http.StatusMethodNotAllowed, Problem{Error: fmt.Sprintf("%s %s is not served; use %s", r.Method, r.URL.Path, method)})
			return
		}
		h(w, r)
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, http.StatusNotFound, Problem{Error: fmt.Sprintf("no endpoint %s; the endpoints are POST /v1/evaluate, GET /v1/bundle, /v1/capability, /v1/events, /v1/openapi.json, /healthz, /readyz, /metrics", r.URL.Path)})
}
