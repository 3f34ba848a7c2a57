package sidecar

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/oar-operator/oar-operator/internal/occurrence"
)

// TestHandlerAllocatesOnlyTheOccurrence: answering an occurrence at which nothing fires
// (the engine evaluates it into a recycled DecisionBuffer without allocating) allocates
// what decoding the occurrence does and nothing more: the body is read, and the answer
// encoded, into recycled storage, and the headers take values made once.
func TestHandlerAllocatesOnlyTheOccurrence(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled buffers at random")
	}
	h := serve(t, sealed(t, testCapability, testRules), Options{}).Handler()
	for _, o := range []string{
		occ("tool.pre_invoke", "s1", `"tool_call": {"name": "read", "arguments": {"path": "/tmp/notes"}}`),
		occ("content.output", "s2", `"facts": {"acme.gateway.tenant_tier": "paid"}, "content": "`+string(bytes.Repeat([]byte("hello "), 100))+`"`),
	} {
		data := []byte(o)
		decoding := testing.AllocsPerRun(100, func() {
			if _, errs := occurrence.Decode(data, occurrence.HostMembers); errs != nil {
				t.Fatal(errs)
			}
		})
		body := new(bytes.Reader)
		req := httptest.NewRequest(http.MethodPost, "/v1/evaluate", nil)
		req.Body, req.ContentLength = io.NopCloser(body), int64(len(data))
		w := &discardWriter{header: http.Header{}}
		answering := testing.AllocsPerRun(100, func() {
			body.Reset(data)
			w.status = 0
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				t.Fatalf("status %d", w.status)
			}
		})
		if answering > decoding {
			t.Errorf("%s: %.0f allocations, %.0f more than decoding the occurrence", o, answering, answering-decoding)
		}
	}
}
