// Package diag is the one error type every OAR load-time and run-time diagnostic uses.
//
// The admission webhook, the controller's status, the CLI and the sidecar all print a
// diagnostic from the same fields, so a user always sees the clause of the specification
// that was violated, the rule it concerns and the field that carries the problem.
package diag

import (
	"fmt"
	"sort"
	"strings"
)

// MaxValueLen bounds Error.Value so a huge offending document never floods a message.
const MaxValueLen = 200

// Error is one diagnostic.
type Error struct {
	// Clause is the clause identifier without brackets, for example "OAR-FACT-3".
	Clause string `json:"clause"`
	// Rule is the qualified identifier of the rule concerned, when known.
	Rule string `json:"rule,omitempty"`
	// Index is the position of the document in its collection, or -1.
	Index int `json:"index"`
	// Field is the JSON path of the offending member inside its document,
	// for example "when" or "selector.tool[0]"; empty for the document itself.
	Field string `json:"field,omitempty"`
	// Value is the offending value as text (JSON text for non-strings), truncated.
	Value string `json:"value,omitempty"`
	// Offset is the code-point offset into Value for condition and copy errors, or -1.
	Offset int `json:"offset"`
	// Message says what is wrong and names the offending thing; for an unknown name
	// with a Suggestion it ends in `did you mean "X"?`.
	Message string `json:"message"`
	// Suggestion is, for a diagnostic about an unknown name, the one name available at
	// that place that is close enough to be the name meant (see Suggest).
	Suggestion string `json:"suggestion,omitempty"`
	// Related lists the qualified identifiers of the other rules the diagnostic
	// involves: the members of a suppression cycle, the mandatory rule an override
	// names, the rules an ambiguous reference matches.
	Related []string `json:"related,omitempty"`
}

// New returns an Error with no index and no offset.
func New(clause, field, format string, args ...any) *Error {
	return &Error{Clause: clause, Index: -1, Offset: -1, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Error renders "field: [clause] message (rule r)".
func (e *Error) Error() string { return e.Format("") }

// Format renders the error with prefix joined in front of the field path
// (for example "spec.rules[2]"), the way every consumer prints it.
func (e *Error) Format(prefix string) string {
	var b strings.Builder
	if p := JoinPath(prefix, e.Field); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	if e.Clause != "" {
		b.WriteString("[")
		b.WriteString(e.Clause)
		b.WriteString("] ")
	}
	b.WriteString(e.Message)
	if e.Rule != "" {
		b.WriteString(" (rule ")
		b.WriteString(e.Rule)
		b.WriteString(")")
	}
	return b.String()
}

// JoinPath joins two JSON path fragments: JoinPath("spec.rules[2]", "when") is
// "spec.rules[2].when", and an index fragment attaches without a dot.
func JoinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	default:
		return prefix + "." + field
	}
}

// Truncate shortens s to MaxValueLen code points, marking the cut.
// It reads no further than the cut, so a long source costs its diagnostics no more than a
// short one.
func Truncate(s string) string {
	n := 0
	for i := range s {
		if n == MaxValueLen {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// List collects every diagnostic of a load rather than stopping at the first.
type List []*Error

// Add appends e and returns it so a caller can fill in more fields.
func (l *List) Add(e *Error) *Error {
	*l = append(*l, e)
	return e
}

// Err returns the list as an error, or nil when it is empty.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Error prints one diagnostic per line.
func (l List) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Sort orders the diagnostics by document index, field and offset, so output is
// stable whatever order checks ran in.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Offset < b.Offset
	})
}

// WithContext sets Index and Rule on every diagnostic that lacks them.
func (l List) WithContext(index int, rule string) List {
	for _, e := range l {
		if e.Index < 0 {
			e.Index = index
		}
		if e.Rule == "" {
			e.Rule = rule
		}
	}
	return l
}
