package admission

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The API server relays a webhook's warnings as Warning headers, and kubectl prints what
// arrives. Offline, relayed does what the API server's warning recorder does
// (k8s.io/apiserver/pkg/endpoints/filters/warning.go), so the lines are the ones kubectl
// would print.
const (
	// relayTotalRunes is the most text the headers carry before every warning is cut.
	relayTotalRunes = 4 * 1024
	// relayItemRunes is what is kept of each warning once they are cut.
	relayItemRunes = 256
)

// relayed returns the warnings kubectl receives for ws: empty and repeated ones dropped,
// as are those a header cannot carry (invalid UTF-8, control characters: the webhook
// answers none, HeaderText escapes them); once their
// text passes relayTotalRunes every warning is cut to relayItemRunes runes, and the
// warnings that come after the cut ones have filled relayTotalRunes again are dropped.
// A warning relayed keeps its kind.
func relayed(ws []Warning) []Warning {
	var out, ordered []Warning
	recorded := map[string]bool{}
	written, truncating := 0, false
	for _, w := range ws {
		if w.Text == "" || recorded[w.Text] || truncating && written >= relayTotalRunes {
			continue
		}
		recorded[w.Text] = true
		ordered = append(ordered, w)
		if truncating {
			w.Text = cut(w.Text)
		}
		if !headerSafe(w.Text) {
			continue
		}
		if n := utf8.RuneCountInString(w.Text); truncating || written+n <= relayTotalRunes {
			written += n
			out = append(out, w)
			continue
		}
		truncating, written, out = true, 0, nil
		for _, o := range ordered {
			if o.Text = cut(o.Text); headerSafe(o.Text) {
				written += utf8.RuneCountInString(o.Text)
				out = append(out, o)
			}
		}
	}
	return out
}

// cut keeps the first relayItemRunes runes of s.
func cut(s string) string {
	if r := []rune(s); len(r) > relayItemRunes {
		return string(r[:relayItemRunes])
	}
	return s
}

// headerSafe reports whether a Warning header can carry s (NewWarningHeader of
// k8s.io/apimachinery/pkg/util/net).
func headerSafe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// HeaderText is s as a Warning header can carry it: each control character written as
// its Go escape (\n, \t, \x1b, \u0085) and each byte that is not UTF-8 as \xNN. The API
// server drops a warning it cannot carry whole, so one whose text has a newline (from a
// flag value or a rule's text) would otherwise never reach kubectl. `oarctl inject`
// prints its warnings so too: as the cluster would, and nothing a terminal acts on.
func HeaderText(s string) string {
	if headerSafe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// headerTexts is HeaderText of each of ws.
func headerTexts(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = HeaderText(w)
	}
	return out
}
