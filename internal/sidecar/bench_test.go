package sidecar

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/oar-operator/oar-operator/internal/bundle"
)

const benchDir = "../../cmd/oarctl/testdata/bench/"

// benchBundle is the 100-rule bundle of `oarctl bench` and `make bench`.
func benchBundle(b *testing.B) (*bundle.Bundle, [][]byte) {
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
