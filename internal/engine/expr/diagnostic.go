package expr

import (
	"fmt"
	"strconv"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// newError builds a load-time diagnostic for the condition src. The message is
// formatted from format and args and must say "at offset N" for the offending
// construct; offset is in code points. The caller fills in the field ("when"),
// the document index and the rule.
func newError(src, clause string, offset int, format string, args ...any) *diag.Error {
	return &diag.Error{
		Clause:  clause,
		Index:   -1,
		Value:   diag.Truncate(src),
		Offset:  offset,
		Message: fmt.Sprintf(format, args...),
	}
}

// quoteRune renders a character for a message: printable characters in quotes,
// everything else as its code point.
func quoteRune(r rune) string {
	if strconv.IsPrint(r) && r != ' ' {
		return strconv.QuoteRune(r)
	}
	return fmt.Sprintf("U+%04X", r)
}
