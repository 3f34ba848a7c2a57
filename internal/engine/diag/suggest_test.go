package diag

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"tool", "tool", 0},
		{"tol", "tool", 1},       // insertion
		{"tools", "tool", 1},     // deletion
		{"tooj", "tool", 1},      // substitution
		{"toll", "tool", 1},      // substitution
		{"tloo", "tool", 2},      // two substitutions, no adjacent swap
		{"otol", "tool", 1},      // adjacent transposition
		{"ca", "abc", 3},         // OSA never edits a swapped pair again (Damerau would be 2)
		{"kitten", "sitting", 3}, // the classic
		{"pth_outside_scope", "path_outside_scope", 1},
		{"größe", "grösse", 2}, // runes, not bytes
	} {
		if got := Distance([]rune(c.a), []rune(c.b)); got != c.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", c.a, c.b, got, c.want)
		}
		if got := Distance([]rune(c.b), []rune(c.a)); got != c.want {
			t.Errorf("Distance(%q, %q) = %d; want %d (symmetric)", c.b, c.a, got, c.want)
		}
		// Bounded by a limit, the distance is exact up to it and above it past it.
		for limit := range c.want + 2 {
			var rows [3][]int
			got := distance([]rune(c.a), []rune(c.b), limit, &rows)
			if c.want <= limit && got != c.want || c.want > limit && got <= limit {
				t.Errorf("distance(%q, %q, %d) = %d; the distance is %d", c.a, c.b, limit, got, c.want)
			}
		}
	}
}

func TestClosest(t *testing.T) {
	facts := []string{"tool", "tool_args", "path_outside_scope", "roles", "acme.gw.tenant_tier", "acme.gw.tenant_id"}
	for _, c := range []struct {
		name       string
		input      string
		candidates []string
		want       string // "" for no suggestion
	}{
		{name: "a dropped letter", input: "pth_outside_scope", candidates: facts, want: "path_outside_scope"},
		{name: "a dropped letter in a short name", input: "tol", candidates: facts, want: "tool"},
		{name: "a swapped pair", input: "rloes", candidates: facts, want: "roles"},
		{name: "letter case alone", input: "TOOL", candidates: facts, want: "tool"},
		{name: "letter case is free", input: "Tools", candidates: []string{"tools", "Tool"}, want: "tools"},
		{name: "camel case for snake case", input: "startsWith", candidates: []string{"starts_with", "ends_with", "size"}, want: "starts_with"},
		{name: "scattered typos in a long name", input: "pth_outsde_scope", candidates: facts, want: "path_outside_scope"},
		{name: "a typo in the last segment of a dotted name", input: "acme.gw.tenant_tir", candidates: facts, want: "acme.gw.tenant_tier"},
		{name: "a duplicate candidate is not a tie", input: "tol", candidates: []string{"tool", "tool"}, want: "tool"},
		{name: "the nearest of two close candidates", input: "tool_arg", candidates: facts, want: "tool_args"},

		{name: "nothing close", input: "undefined", candidates: facts},
		{name: "no candidates", input: "tool", candidates: nil},
		{name: "a shared prefix does not make a different word close", input: "acme.gw.tenant_name", candidates: facts},
		{name: "a shared namespace does not make another rule close", input: "acme.security/NO_CURL", candidates: []string{"acme.security/NO_WGET"}},
		{name: "a one-letter name is never corrected", input: "x", candidates: []string{"y", "xy"}},
		{name: "two at the same distance", input: "rule_b", candidates: []string{"rule_a", "rule_c"}},
		{name: "two equal but for case", input: "Tool", candidates: []string{"tool", "TOOL"}},
		{name: "the name itself is not a suggestion", input: "tool", candidates: []string{"tool"}},
		{name: "a very long name", input: strings.Repeat("a", 10000), candidates: facts},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Closest(c.input, slices.Values(c.candidates))
			if ok != (c.want != "") || got != c.want {
				t.Errorf("Closest(%q) = %q, %v; want %q", c.input, got, ok, c.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	e := New("OAR-FACT-3", "when", "unknown identifier %q at offset 0", "pth_outside_scope").
		Suggest("pth_outside_scope", slices.Values([]string{"tool", "path_outside_scope"}))
	if e.Suggestion != "path_outside_scope" {
		t.Errorf("Suggestion = %q; want path_outside_scope", e.Suggestion)
	}
	want := `when: [OAR-FACT-3] unknown identifier "pth_outside_scope" at offset 0; did you mean "path_outside_scope"?`
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q\nwant      %q", got, want)
	}
	none := New("OAR-FACT-3", "when", "unknown identifier %q at offset 0", "undefined").
		Suggest("undefined", slices.Values([]string{"tool"}))
	if none.Suggestion != "" || strings.Contains(none.Message, "did you mean") {
		t.Errorf("nothing close must suggest nothing; got %q, %q", none.Suggestion, none.Message)
	}
}

// FuzzDistance checks the metric's bounds on any input: symmetric, zero exactly for
// equal strings, at least the length difference and at most the longer length; and
// Closest never suggests the name itself.
func FuzzDistance(f *testing.F) {
	f.Add("pth_outside_scope", "path_outside_scope")
	f.Add("ca", "abc")
	f.Add("", "x")
	f.Add("größe", "grösse")
	f.Fuzz(func(t *testing.T, a, b string) {
		ra, rb := []rune(a), []rune(b)
		d := Distance(ra, rb)
		if d != Distance(rb, ra) {
			t.Fatalf("Distance(%q, %q) is not symmetric", a, b)
		}
		if (d == 0) != (string(ra) == string(rb)) || d < abs(len(ra)-len(rb)) || d > max(len(ra), len(rb)) {
			t.Fatalf("Distance(%q, %q) = %d is out of bounds", a, b, d)
		}
		if s, ok := Closest(a, slices.Values([]string{a, b})); ok && s == a {
			t.Fatalf("Closest(%q) suggested the name itself", a)
		}
		for _, limit := range []int{0, 1, 2, 5, d - 1, d} {
			var rows [3][]int
			if got := distance(ra, rb, limit, &rows); got != d && (d <= limit || got <= limit) {
				t.Fatalf("distance(%q, %q, %d) = %d; Distance is %d", a, b, limit, got, d)
			}
		}
		_, ok := Closest(a, slices.Values([]string{b}))
		if want := a != b && isClose(a, b); ok != want {
			t.Fatalf("Closest(%q, [%q]) suggests %v; the definition says %v", a, b, ok, want)
		}
	})
}

// isClose is Closest's definition for one candidate, written plainly: no length set
// aside before the distance, every distance computed whole.
func isClose(name, cand string) bool {
	a, b := []rune(name), []rune(cand)
	if len(a) > MaxSuggestLen || len(b) > MaxSuggestLen {
		return false
	}
	for i := range a {
		a[i] = unicode.ToLower(a[i])
	}
	for i := range b {
		b[i] = unicode.ToLower(b[i])
	}
	n := len(a)
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	limit := max(len(a), len(b), 3) / 3
	d := Distance(a, b)
	return d <= limit && d < n
}

// TestClosestComparesNoLongName: a name, or a candidate, past MaxSuggestLen code
// points is compared with nothing, however close, so no suggestion costs the square of
// a long name's length.
func TestClosestComparesNoLongName(t *testing.T) {
	long := strings.Repeat("é", MaxSuggestLen)
	if s, ok := Closest(long+"x", slices.Values([]string{long + "y"})); ok {
		t.Errorf("a name past the bound was compared: suggested %q", s)
	}
	if s, ok := Closest(long[:len(long)-2]+"x", slices.Values([]string{long + "y"})); ok {
		t.Errorf("a candidate past the bound was compared: suggested %q", s)
	}
	if s, ok := Closest(long[:len(long)-2]+"x", slices.Values([]string{long[:len(long)-2] + "y"})); !ok {
		t.Errorf("names within the bound one edit apart: no suggestion (%q)", s)
	}
}
