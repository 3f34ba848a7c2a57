package diag

import (
	"fmt"
	"iter"
	"unicode"
)

// Suggest records, for a diagnostic about the unknown name, the one candidate close
// enough to be the name meant (see Closest): Suggestion holds it and the message ends
// in `; did you mean "X"?`. It changes nothing when no candidate is close, and returns
// e so a caller can chain it.
func (e *Error) Suggest(name string, candidates iter.Seq[string]) *Error {
	if s, ok := Closest(name, candidates); ok {
		e.Suggestion = s
		e.Message += fmt.Sprintf("; did you mean %q?", s)
	}
	return e
}

// Closest returns the candidate an unknown name most likely misspells, or false when
// none is close or two are equally close, since a wrong guess misleads more than none.
//
// Letter case costs nothing, so "startsWith" is one edit from "starts_with". Past
// case, name and a candidate are compared by their optimal-string-alignment distance
// (insertions, deletions, substitutions and swaps of adjacent characters, each costing
// 1) over the part where they differ, their common prefix and suffix set aside, so a
// shared namespace such as "acme.security/" neither helps nor hurts. The candidate is
// close when that distance is at most a third of the longer differing part (and at
// least 1), and smaller than the length of name, so a one-letter name is never
// "corrected" into another. Of the close candidates, the nearest is chosen when it is
// the only one at that distance. Lengths count code points.
func Closest(name string, candidates iter.Seq[string]) (string, bool) {
	target := lower(name)
	best, bestDist, tied := "", -1, false
	for c := range candidates {
		if c == name || c == best {
			continue
		}
		d, ok := closeness(target, lower(c))
		switch {
		case !ok:
		case bestDist < 0 || d < bestDist:
			best, bestDist, tied = c, d, false
		case d == bestDist:
			tied = true
		}
	}
	if bestDist < 0 || tied {
		return "", false
	}
	return best, true
}

func lower(s string) []rune {
	r := []rune(s)
	for i, c := range r {
		r[i] = unicode.ToLower(c)
	}
	return r
}

// closeness is the distance between a and b and whether b is close to a.
func closeness(a, b []rune) (int, bool) {
	n := len(a)
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	limit := max(len(a), len(b), 3) / 3
	if abs(len(a)-len(b)) > limit {
		return 0, false
	}
	d := Distance(a, b)
	return d, d <= limit && d < n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Distance is the optimal-string-alignment distance between a and b: the fewest
// insertions, deletions, substitutions and transpositions of two adjacent runes that
// turn a into b, no substring being edited twice (the restricted Damerau-Levenshtein
// distance). It keeps three rows, so it needs O(len(b)) memory.
func Distance(a, b []rune) int {
	prev2 := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)  // row i-1
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
