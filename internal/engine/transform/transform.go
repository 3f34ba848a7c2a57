// Package transform applies the accumulated transforms of an occurrence to its
// content: section 7.2 (Transform) of the OAR specification, [OAR-OPS-13] to
// [OAR-OPS-23], and in particular the normative algorithm of [OAR-OPS-16].
//
// Every offset is a Unicode code point offset into the content as it was at the start
// of the occurrence ([OAR-OPS-19], [OAR-OPS-20]). Apply never rewrites the string in
// place. It records each edit in original coordinates — a rewrite replaces an
// original range, an insertion is anchored at an original point — and builds the
// result in one pass at the end, so translating a later transform's offsets through
// earlier edits is exact by construction.
//
// Decisions on cases the specification leaves open:
//   - A zero-width span of a redact or replace transform (and a whole-content redact
//     or replace of empty content) removes nothing, so it is applied as an insertion of
//     its replacement: it consumes no earlier insertion, is never skipped, and is
//     consumed by a later rewrite beginning at or strictly containing its point, like
//     an annotation.
//   - An insertion whose point lies strictly inside a range an earlier transform
//     rewrote — possible because a zero-width range overlaps nothing ([OAR-OPS-23]),
//     and for an annotate whose span overlaps an earlier rewrite — is placed
//     immediately after that rewrite's replacement text, since the code point it was
//     anchored before no longer exists. No later rewrite can consume it: any rewrite
//     beginning at or containing its point overlaps that range and is skipped.
//   - Insertions at the same point appear in the order they were applied.
//   - Identical zero-width spans in one transform are not merged, because merging is
//     defined for ranges that overlap and a zero-width range overlaps nothing; each is
//     applied.
//   - A skip records the covering span after merging ([OAR-OPS-20]), since that is the
//     span the algorithm tests and would have applied.
package transform

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// DefaultRedaction is what a redact without a replacement substitutes: exactly these
// ten code points ([OAR-OPS-13]).
const DefaultRedaction = "[REDACTED]"

// ReasonOverlap is the reason of every skip ([OAR-OPS-23]).
const ReasonOverlap = "overlap"

// Action is a transform's action ([OAR-OPS-13]).
type Action uint8

// The actions. Redact and Replace behave identically once the replacement is
// defaulted ([OAR-OPS-21]).
const (
	Redact Action = iota
	Replace
	Annotate
)

var actionNames = [...]string{Redact: "redact", Replace: "replace", Annotate: "annotate"}

// String is the spelling a rule document uses.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// ParseAction reads an action spelling.
func ParseAction(s string) (Action, bool) {
	for a, name := range actionNames {
		if name == s {
			return Action(a), true
		}
	}
	return 0, false
}

// Span is a half-open range [Start, End) of code-point offsets into the original
// content.
type Span struct{ Start, End int }

// Transform is one accumulated transform ([OAR-OPS-15]).
type Transform struct {
	// Rule is the qualified identifier of the rule that produced it.
	Rule   string
	Action Action
	// Replacement is the text to substitute or insert, already defaulted to
	// DefaultRedaction for a redact that carried none.
	Replacement string
	// Whole marks the target content: the single span covering the whole content,
	// and for annotate an insertion at its end.
	Whole bool
	// Spans are the spans of a list<map> target, as SpansFromFact returned them.
	Spans []Span
}

// Skip is a span that was not applied because it overlapped a range already
// rewritten ([OAR-OPS-16], [OAR-OPS-23]).
type Skip struct {
	Rule       string
	Start, End int
	Reason     string
}

// rewrite is an applied replacement of a non-empty original range. seen is how many
// insertions had been made when it was applied: only those can it consume.
type rewrite struct {
	start, end int
	text       string
	seen       int
}

// insertion is text anchored before original code point point. at is where it is
// rendered: point itself, or the end of the rewrite that had already removed point
// when it was applied.
type insertion struct {
	point, at int
	text      string
}

// editor holds the edits made so far, in original coordinates. Every edit begins and
// ends at an offset of some span to apply, so the editor indexes those offsets: each
// question about the edits takes logarithmic time rather than a scan of them, and a
// rewrite costs in proportion to the offsets it covers, which no other rewrite covers.
type editor struct {
	// points are the distinct offsets of the spans to apply, ascending. Interval i is
	// [points[i], points[i+1]); the one beginning at the last point is never rewritten.
	points []int
	// owner[i] is the rewrite that removed interval i, or -1. The rewrites are the
	// non-empty ranges of the rewritten set of [OAR-OPS-16] and are disjoint, so an
	// interval has at most one. The zero-width ranges annotations record overlap
	// nothing, so they need no entry.
	owner []int
	// removed marks the intervals that have an owner.
	removed fenwick
	// rewrites and insertions are in the order applied.
	rewrites   []rewrite
	insertions []insertion
}

// Apply applies ts to content in order ([OAR-OPS-16]) and returns the result and the
// spans skipped for overlap, in accumulated transform order and then descending span
// start and end ([OAR-OPS-23]). The caller does not call it when the decision is block
// ([OAR-OPS-17]). Offsets count code points, a surrogate in its generalized form
// (package codepoint) as one; any other byte that is not UTF-8 counts as one and is
// kept as it is. n is codepoint.Count(content), which the caller has already counted.
func Apply(content string, n int, ts []Transform) (string, []Skip) {
	// Resolve every transform's spans first, since the editor is indexed by their
	// offsets. No transform yields more spans than it carries.
	total := 0
	for i := range ts {
		total += max(len(ts[i].Spans), 1)
	}
	all := make([]Span, 0, total)
	// The editor's indexes and where each transform's spans begin in all share one
	// allocation, as a transform over a few spans is the usual case.
	ints := make([]int, 6*total+1+len(ts)+1)
	from := ints[6*total+1:]
	for i := range ts {
		from[i] = len(all)
		all = ts[i].spans(n, all)
	}
	from[len(ts)] = len(all)
	ed := newEditor(all, ints[:6*total+1])
	var skips []Skip
	for i := range ts {
		t := &ts[i]
		for _, s := range all[from[i]:from[i+1]] {
			if t.Action == Annotate {
				// An annotation removes nothing and records a zero-width range at its
				// insertion point, which overlaps nothing ([OAR-OPS-21]).
				ed.insert(s.End, t.Replacement)
				continue
			}
			if s.Start == s.End {
				ed.insert(s.Start, t.Replacement)
				continue
			}
			if ed.overlaps(s) {
				skips = append(skips, Skip{Rule: t.Rule, Start: s.Start, End: s.End, Reason: ReasonOverlap})
				continue
			}
			ed.replace(s, t.Replacement)
		}
	}
	return ed.render(content, n == len(content)), skips
}

// spans resolves t's target to the spans to apply, merged and in application order
// ([OAR-OPS-16] steps 2 to 4), appending them to buf. A span outside content of n
// code points is dropped, as SpansFromFact already does for a fact ([OAR-OPS-19]).
func (t *Transform) spans(n int, buf []Span) []Span {
	if t.Whole {
		return append(buf, Span{0, n})
	}
	from := len(buf)
	for _, s := range t.Spans {
		if s.Start >= 0 && s.Start <= s.End && s.End <= n {
			buf = append(buf, s)
		}
	}
	return append(buf[:from], mergeSpans(buf[from:])...)
}

// mergeSpans merges spans that share a code point into one covering span
// ([OAR-OPS-20]) and sorts the result by start, then end, descending. Zero-width
// spans overlap nothing and are kept as they are; spans that only touch stay apart.
func mergeSpans(s []Span) []Span {
	if len(s) < 2 {
		return s
	}
	slices.SortFunc(s, func(a, b Span) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
	out := s[:0]
	last := -1 // index in out of the last non-empty span
	for _, sp := range s {
		if sp.Start < sp.End && last >= 0 && sp.Start < out[last].End {
			out[last].End = max(out[last].End, sp.End)
			continue
		}
		out = append(out, sp)
		if sp.Start < sp.End {
			last = len(out) - 1
		}
	}
	slices.SortFunc(out, func(a, b Span) int {
		return cmp.Or(cmp.Compare(b.Start, a.Start), cmp.Compare(b.End, a.End))
	})
	return out
}

// newEditor returns an editor for applying spans, which it does not keep, with its
// indexes in room, at least 6*len(spans)+1 zeroed ints.
func newEditor(spans []Span, room []int) editor {
	points := room[: 0 : 2*len(spans)]
	for _, s := range spans {
		points = append(points, s.Start, s.End)
	}
	slices.Sort(points)
	points = slices.Compact(points)
	owner := room[2*len(spans) : 2*len(spans)+len(points)]
	for i := range owner {
		owner[i] = -1
	}
	return editor{
		points:   points,
		owner:    owner,
		removed:  fenwick(room[4*len(spans) : 4*len(spans)+len(points)+1]),
		rewrites: make([]rewrite, 0, len(spans)),
	}
}

// index returns the interval beginning at p, an offset of a span being applied.
func (ed *editor) index(p int) int {
	i, _ := slices.BinarySearch(ed.points, p)
	return i
}

// overlaps reports whether the non-empty span s shares a code point with a range
// already rewritten.
func (ed *editor) overlaps(s Span) bool {
	return ed.removed.count(ed.index(s.End)) > ed.removed.count(ed.index(s.Start))
}

// replace rewrites the non-empty span s, which overlaps no earlier rewrite. It
// consumes every insertion already made at a point it begins at or strictly contains;
// one anchored at its end survives ([OAR-OPS-21]). render drops the consumed ones, so
// that a rewrite need not look at insertions anchored elsewhere.
func (ed *editor) replace(s Span, text string) {
	r := len(ed.rewrites)
	ed.rewrites = append(ed.rewrites, rewrite{start: s.Start, end: s.End, text: text, seen: len(ed.insertions)})
	for i, end := ed.index(s.Start), ed.index(s.End); i < end; i++ {
		ed.owner[i] = r
		ed.removed.add(i)
	}
}

// insert anchors text before original code point p.
func (ed *editor) insert(p int, text string) {
	at := p
	// A rewrite strictly containing p removed the code point p was anchored to: it
	// owns the intervals on both sides of p.
	if i := ed.index(p); i > 0 && ed.owner[i] >= 0 && ed.owner[i-1] == ed.owner[i] {
		at = ed.rewrites[ed.owner[i]].end
	}
	ed.insertions = append(ed.insertions, insertion{point: p, at: at, text: text})
}

// consumed reports whether a rewrite applied after the kth insertion, in, removed its
// point. At most one rewrite covers that point.
func (ed *editor) consumed(k int, in insertion) bool {
	r := ed.owner[ed.index(in.point)]
	return r >= 0 && ed.rewrites[r].seen > k
}

// render builds the result from the original content and the edits in one pass.
// ascii reports that every code point of content is one byte.
func (ed *editor) render(content string, ascii bool) string {
	if len(ed.rewrites) == 0 && len(ed.insertions) == 0 {
		return content
	}
	// Drop the consumed insertions while the owners still number the rewrites in the
	// order applied, and only then sort both.
	ins := ed.insertions[:0]
	for k, in := range ed.insertions {
		if !ed.consumed(k, in) {
			ins = append(ins, in)
		}
	}
	slices.SortStableFunc(ins, func(a, b insertion) int { return cmp.Compare(a.at, b.at) })
	rw := ed.rewrites
	slices.SortFunc(rw, func(a, b rewrite) int { return cmp.Compare(a.start, b.start) })
	size := len(content)
	for _, r := range rw {
		size += len(r.text)
	}
	for _, in := range ins {
		size += len(in.text)
	}
	var b strings.Builder
	b.Grow(size)
	cur := cursor{s: content, ascii: ascii}
	for len(rw) > 0 || len(ins) > 0 {
		// Insertions at a point precede a rewrite beginning there: inserted text
		// belongs to the content beginning at its point ([OAR-OPS-21]).
		if len(ins) > 0 && (len(rw) == 0 || ins[0].at <= rw[0].start) {
			b.WriteString(cur.copyTo(ins[0].at))
			b.WriteString(ins[0].text)
			ins = ins[1:]
			continue
		}
		b.WriteString(cur.copyTo(rw[0].start))
		b.WriteString(rw[0].text)
		cur.skipTo(rw[0].end)
		rw = rw[1:]
	}
	b.WriteString(content[cur.byte:])
	return b.String()
}

// fenwick counts marked intervals by prefix (a Fenwick tree, one longer than the
// intervals), so that whether a run of intervals holds a mark is a difference of two
// counts.
type fenwick []int

// add marks interval i, which is not yet marked.
func (f fenwick) add(i int) {
	for i++; i < len(f); i += i & -i {
		f[i]++
	}
}

// count returns how many of intervals [0, i) are marked.
func (f fenwick) count(i int) int {
	c := 0
	for ; i > 0; i -= i & -i {
		c += f[i]
	}
	return c
}

// cursor walks a string forward by code points, tracking the byte offset.
type cursor struct {
	s          string
	ascii      bool
	byte, rune int
}

// copyTo advances to code point p and returns the text passed over.
func (c *cursor) copyTo(p int) string {
	from := c.byte
	c.skipTo(p)
	return c.s[from:c.byte]
}

// skipTo advances to code point p.
func (c *cursor) skipTo(p int) {
	if c.ascii {
		c.byte, c.rune = max(c.byte, p), max(c.rune, p)
		return
	}
	if c.rune < p {
		c.byte += codepoint.Skip(c.s[c.byte:], p-c.rune)
		c.rune = p
	}
}

// ErrMalformedSpan marks a member of a target fact that is not a span. The engine
// treats it as a fact-provider failure and follows the rule's on_error ([OAR-OPS-19],
// [OAR-OPS-3]).
var ErrMalformedSpan = errors.New("malformed span")

// SpansFromFact reads the members of a list<map> target fact as spans
// ([OAR-OPS-19]). Each member must carry start and end as non-negative integers (a
// json.Number with an integral spelling, or an int or int64) with start no greater
// than end; any other member is allowed and ignored. A member that does not is an
// error wrapping ErrMalformedSpan. A well-formed span reaching past contentLen code
// points falls outside the content and is dropped, not clamped — including one whose
// offsets are integers too large for 64 bits.
func SpansFromFact(members []map[string]any, contentLen int) ([]Span, error) {
	spans := make([]Span, 0, len(members))
	for i, m := range members {
		start, err := spanBound(m, "start")
		if err != nil {
			return nil, fmt.Errorf("%w: member %d: %v ([OAR-OPS-19])", ErrMalformedSpan, i, err)
		}
		end, err := spanBound(m, "end")
		if err != nil {
			return nil, fmt.Errorf("%w: member %d: %v ([OAR-OPS-19])", ErrMalformedSpan, i, err)
		}
		if start.Cmp(end) > 0 {
			return nil, fmt.Errorf("%w: member %d: start %s exceeds end %s ([OAR-OPS-19])", ErrMalformedSpan, i, start, end)
		}
		if end.huge != nil || end.n > int64(contentLen) {
			continue
		}
		spans = append(spans, Span{Start: int(start.n), End: int(end.n)})
	}
	return spans, nil
}

// bound is a non-negative integer span offset: n, or huge when it exceeds int64.
type bound struct {
	n    int64
	huge *big.Int
}

// Cmp compares two bounds numerically.
func (b bound) Cmp(o bound) int {
	switch {
	case b.huge == nil && o.huge == nil:
		return cmp.Compare(b.n, o.n)
	case b.huge == nil:
		return -1
	case o.huge == nil:
		return 1
	}
	return b.huge.Cmp(o.huge)
}

func (b bound) String() string {
	if b.huge != nil {
		return b.huge.String()
	}
	return strconv.FormatInt(b.n, 10)
}

func spanBound(m map[string]any, key string) (bound, error) {
	v, ok := m[key]
	if !ok {
		return bound{}, fmt.Errorf("%s is missing", key)
	}
	if i, ok := types.AsInt(v); ok {
		if i < 0 {
			return bound{}, fmt.Errorf("%s is %d, not a non-negative integer", key, i)
		}
		return bound{n: i}, nil
	}
	// An integral spelling too large for int64 is still a non-negative integer; it
	// can only fall outside the content.
	if num, isNum := v.(json.Number); isNum && digitsOnly(string(num)) {
		if h, ok := new(big.Int).SetString(string(num), 10); ok {
			return bound{huge: h}, nil
		}
	}
	return bound{}, fmt.Errorf("%s is %s, not a non-negative integer", key, types.DescribeJSON(v))
}

func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
