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
