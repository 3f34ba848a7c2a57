package diag

import (
	"strings"
	"testing"
)

// TestTruncateKeepsMaxValueLenCodePoints: a value of up to MaxValueLen code points is
// kept whole, whatever its length in bytes; a longer one is cut after MaxValueLen code
// points, never inside one, and the cut is marked.
func TestTruncateKeepsMaxValueLenCodePoints(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "abc", "abc"},
		{"exactly the limit", strings.Repeat("a", MaxValueLen), strings.Repeat("a", MaxValueLen)},
		{"one over", strings.Repeat("a", MaxValueLen+1), strings.Repeat("a", MaxValueLen) + "…"},
		{"multi-byte at the limit", strings.Repeat("é", MaxValueLen), strings.Repeat("é", MaxValueLen)},
		{"multi-byte over", strings.Repeat("€", MaxValueLen+5), strings.Repeat("€", MaxValueLen) + "…"},
		{"a long source", strings.Repeat("pth + ", 100_000) + "1 > 0", strings.Repeat("pth + ", 100_000)[:MaxValueLen] + "…"},
	} {
		if got := Truncate(c.in); got != c.want {
			t.Errorf("%s: Truncate = %q (%d bytes), want %q", c.name, got, len(got), c.want)
		}
	}
}

// BenchmarkTruncateLongSource is Truncate of a 600 kB condition, as each of its
// diagnostics quotes it: it costs what a short one does, where counting every code
// point first made a condition with one diagnostic per identifier quadratic.
func BenchmarkTruncateLongSource(b *testing.B) {
	src := strings.Repeat("pth + ", 100_000) + "1 > 0"
	for b.Loop() {
		Truncate(src)
	}
}
