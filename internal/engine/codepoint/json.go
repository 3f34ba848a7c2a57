package codepoint

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendJSON appends s as a JSON string, as encoding/json writes it with HTML escaping
// off (\b \f \n \r \t \" \\ by name, other control bytes as \u00XX, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped), except for a lone surrogate code point, which it
// writes as its \udXXX escape where encoding/json would write U+FFFD: a string is a
// sequence of code points ([OAR-FACT-23]), and JSON can name a lone surrogate only by
// escape. The sidecar's answers and the decision log write strings with it.
func AppendJSON(b []byte, s string) []byte { return appendJSON(b, s, true) }

// AppendEncodingJSON appends s as encoding/json writes it with HTML escaping off,
// exactly: as AppendJSON, but each byte of a lone surrogate's generalized form as
// \ufffd. A MarshalJSON standing for a map of strings writes them with it, so that its
// bytes are the map's.
func AppendEncodingJSON(b []byte, s string) []byte { return appendJSON(b, s, false) }

// appendJSON is AppendJSON, writing a lone surrogate by its escape only with
// surrogates.
func appendJSON(b []byte, s string, surrogates bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		if r, ok := Surrogate(s[i:]); ok && surrogates {
			// A lone surrogate code point: JSON can name it only by escape.
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', 'd', hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
			i += 3
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plain8 reports whether none of the 8 bytes of s needs escaping (a control byte, a
// quote, a backslash or a non-ASCII byte), testing them as one word: most of an
// answer or a log line is identifiers that need none.
func plain8(s string) bool {
	_ = s[7]
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	const ones, high = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^('"'*ones), x^('\\'*ones)
	control := (x - 0x20*ones) &^ x
	return (x|control|(quote-ones)&^quote|(backslash-ones)&^backslash)&high == 0
}
