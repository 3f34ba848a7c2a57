package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// TestJSONPathJoinsAsJoinPath: a path written in one pass reads as joining it level by
// level with diag.JoinPath does, for member names that are empty, start with a bracket
// or hold dots, and indices anywhere.
func TestJSONPathJoinsAsJoinPath(t *testing.T) {
	names := []string{"", "a", "tool_args", "[x]", "a.b", "é", "[0]"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var p jsonPath
		want := ""
		for range rng.IntN(6) {
			if rng.IntN(3) == 0 {
				i := rng.IntN(12)
				p = p.index(i)
				want += fmt.Sprintf("[%d]", i)
				continue
			}
			k := names[rng.IntN(len(names))]
			p = p.member(k)
			want = diag.JoinPath(want, k)
		}
		if got := p.String(); got != want {
			t.Fatalf("%+v: %q, want %q", p, got, want)
		}
	}
}

// BenchmarkJSONPathDeepLongNames is the path of a duplicate member 250 objects deep
// under 2,000-byte names, as a 500 kB request can hold: written once, it costs its
// length.
func BenchmarkJSONPathDeepLongNames(b *testing.B) {
	var p jsonPath
	for range 250 {
		p = p.member(strings.Repeat("k", 2000))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = p.String()
	}
}
