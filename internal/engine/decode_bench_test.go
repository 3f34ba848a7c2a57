package engine

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodeJSON decodes a 1,000-rule set strictly (numbers exact, duplicate keys
// refused), what the webhook and the sidecar do with every document they receive.
func BenchmarkDecodeJSON(b *testing.B) {
	docs := make([]any, 1000)
	for i := range docs {
		docs[i] = benchRule(i, "read")
	}
	data, _ := json.Marshal(docs)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}
