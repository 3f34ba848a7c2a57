package diag

import (
	"fmt"
	"iter"
	"unicode"
	"unicode/utf8"
)

// Suggest records, for a diagnostic about the unknown name, the one candidate close
// enough to be the name meant (see Closest): Suggestion holds it and the message ends
// in `; did you mean "X"?`. It changes nothing when no candidate is close, and returns
// e so a caller can chain it.
func (e *Error) Suggest(name string, candidates iter.Seq[string]) *Error {
	return e.SuggestWithin(name, candidates, nil)
}

// SuggestWithin is Suggest spending the comparison from work (see ClosestWithin).
func (e *Error) SuggestWithin(name string, candidates iter.Seq[string], work *int) *Error {
	if s, ok := ClosestWithin(name, candidates, work); ok {
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
//
// A name or candidate longer than MaxSuggestLen code points is compared with nothing:
// the distance costs the product of the lengths, and so long a name is no typing slip.
// A candidate whose length alone puts it too far is set aside before any is computed.
func Closest(name string, candidates iter.Seq[string]) (string, bool) {
	return ClosestWithin(name, candidates, nil)
}

// ClosestWithin is Closest doing no more than the work left in *work, for a caller
// that bounds what many suggestions cost together; nil bounds nothing. A candidate
// costs the code points of both names, and one whose distance is computed also the
// product of the lengths of their differing parts. When what is left cannot pay for a
// candidate, ClosestWithin stops, suggests nothing, and leaves nothing for the next.
func ClosestWithin(name string, candidates iter.Seq[string], work *int) (string, bool) {
	n := utf8.RuneCountInString(name)
	if n > MaxSuggestLen {
		return "", false
	}
	target := lower(make([]rune, 0, n), name)
	var s scratch
	best, bestDist, tied := "", -1, false
	for c := range candidates {
		if c == name || c == best {
			continue
		}
		m := utf8.RuneCountInString(c)
		if !spend(work, n+m) {
			return "", false
		}
		if m > MaxSuggestLen || abs(n-m) > max(n, m, 3)/3 {
			// The differing parts differ in length as much, and are no longer.
			continue
		}
		s.cand = lower(s.cand[:0], c)
		d, ok := s.closeness(target, s.cand, work)
		if d < 0 {
			return "", false
		}
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

// MaxSuggestLen is the longest name, in code points, Closest compares.
const MaxSuggestLen = 128

// lower appends s to buf in lower case.
func lower(buf []rune, s string) []rune {
	for _, c := range s {
		buf = append(buf, unicode.ToLower(c))
	}
	return buf
}

// scratch is the memory one Closest call reuses from candidate to candidate.
type scratch struct {
	cand []rune
	rows [3][]int
}

// spend takes cost from *work, when work is not nil, and reports whether it was there;
// when it was not, nothing is left.
func spend(work *int, cost int) bool {
	switch {
	case work == nil:
	case *work < cost:
		*work = 0
		return false
	default:
		*work -= cost
	}
	return true
}

// closeness is the distance between a and b and whether b is close to a; the distance
// is -1 when work could not pay for it.
func (s *scratch) closeness(a, b []rune, work *int) (int, bool) {
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
	if !spend(work, len(a)*len(b)) {
		return -1, false
	}
	d := distance(a, b, limit, &s.rows)
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
	var rows [3][]int
	return distance(a, b, len(a)+len(b), &rows)
}

// distance is Distance when it is at most limit, and some larger value otherwise: it
// stops once two rows in a row exceed limit, as no later row can then come back under
// it. rows is room it reuses.
func distance(a, b []rune, limit int, rows *[3][]int) int {
	for k := range rows {
		if cap(rows[k]) < len(b)+1 {
			rows[k] = make([]int, len(b)+1)
		}
		rows[k] = rows[k][:len(b)+1]
	}
	prev2, prev, cur := rows[0], rows[1], rows[2] // rows i-2, i-1 and i
	for j := range prev {
		prev[j] = j
	}
	over := false // whether every entry of row i-1 exceeds limit (row 0 holds a 0)
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		least := i
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
			least = min(least, d)
		}
		if least > limit && over {
			return limit + 1
		}
		over = least > limit
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
