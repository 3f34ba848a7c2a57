package sidecar

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/bundle"
)

const benchDir = "../../cmd/oarctl/testdata/bench/"

// benchBundle is the 100-rule bundle of `oarctl bench` and `make bench`.
func benchBundle(b testing.TB) (*bundle.Bundle, [][]byte) {
	b.Helper()
	read := func(name string) string {
		data, err := os.ReadFile(benchDir + name)
		if err != nil {
			b.Fatal(err)
		}
		return string(data)
	}
	bd := sealed(b, read("capability.yaml"), read("rules.yaml"))
	var occs [][]byte
	for _, line := range bytes.Split([]byte(read("occurrences.jsonl")), []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			occs = append(occs, line)
		}
	}
	return bd, occs
}

// BenchmarkEvaluate is POST /v1/evaluate through the handler, in memory: reading the
// body, decoding the occurrence, evaluating it against 100 rules, encoding the answer.
func BenchmarkEvaluate(b *testing.B) {
	bd, occs := benchBundle(b)
	h := serve(b, bd, Options{}).Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		serveEvaluate(b, h, occs[i%len(occs)])
	}
}

// BenchmarkEvaluateParallel is BenchmarkEvaluate from GOMAXPROCS goroutines.
func BenchmarkEvaluateParallel(b *testing.B) {
	bd, occs := benchBundle(b)
	h := serve(b, bd, Options{}).Handler()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			serveEvaluate(b, h, occs[i%len(occs)])
		}
	})
}

// BenchmarkEvaluateHandler is BenchmarkEvaluate without the benchmark's own
// allocations: one request is sent again and again, its body a reader reset over the
// next occurrence, and the answer goes to a response writer that keeps one header map
// and discards the body. What it allocates, and most of its time, is the handler's:
// the routing, reading the body, decoding, evaluating and encoding the answer.
func BenchmarkEvaluateHandler(b *testing.B) {
	bd, occs := benchBundle(b)
	h := serve(b, bd, Options{}).Handler()
	body := new(bytes.Reader)
	req := httptest.NewRequest(http.MethodPost, "/v1/evaluate", nil)
	req.Body = io.NopCloser(body)
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		o := occs[i%len(occs)]
		body.Reset(o)
		req.ContentLength = int64(len(o))
		w.status = 0
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d for %s", w.status, o)
		}
	}
}

// discardWriter is an http.ResponseWriter that keeps the status, reuses one header
// map (the handler sets the same keys every time) and discards the body.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) { w.status = status }

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}

func serveEvaluate(b *testing.B, h http.Handler, body []byte) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/evaluate", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

// BenchmarkEvaluateLoopback is POST /v1/evaluate through net/http over a keep-alive
// loopback TCP connection, one request at a time: what the handler benchmarks leave
// out, the server's connection handling and the system calls. The client's reading of
// the response (http.ReadResponse) is in the figures too.
func BenchmarkEvaluateLoopback(b *testing.B) {
	bd, occs := benchBundle(b)
	ts := serve(b, bd, Options{})
	addr := strings.TrimPrefix(ts.srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	reqs := make([][]byte, len(occs))
	for i, o := range occs {
		reqs[i] = fmt.Appendf(nil, "POST /v1/evaluate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(o), o)
	}
	var body []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := c.Write(reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		body, err = io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d: %s %v", resp.StatusCode, body, err)
		}
	}
}
