package expr

// token is a lexical token of the condition language (A.1).
type token uint8

const (
	tokEOF     token = iota // end of the condition
	tokIllegal              // a lexical error; the scanner holds the diagnostic

	tokIdent  // name { "." name }
	tokInt    // digit { digit }
	tokDouble // digit { digit } "." digit { digit }
	tokString // '...' or "..."

	tokTrue  // true
	tokFalse // false
	tokIn    // in

	tokLParen   // (
	tokRParen   // )
	tokLBrack   // [
	tokRBrack   // ]
	tokComma    // ,
	tokQuestion // ?
	tokColon    // :

	tokNot // !
	tokAdd // +
	tokSub // -
	tokMul // *
	tokQuo // /
	tokRem // %

	tokEql // ==
	tokNeq // !=
	tokLss // <
	tokLeq // <=
	tokGtr // >
	tokGeq // >=

	tokLAnd // &&
	tokLOr  // ||
)

var tokenText = [...]string{
	tokEOF:      "end of condition",
	tokIllegal:  "illegal token",
	tokIdent:    "identifier",
	tokInt:      "integer literal",
	tokDouble:   "double literal",
	tokString:   "string literal",
	tokTrue:     "true",
	tokFalse:    "false",
	tokIn:       "in",
	tokLParen:   "(",
	tokRParen:   ")",
	tokLBrack:   "[",
	tokRBrack:   "]",
	tokComma:    ",",
	tokQuestion: "?",
	tokColon:    ":",
	tokNot:      "!",
	tokAdd:      "+",
	tokSub:      "-",
	tokMul:      "*",
	tokQuo:      "/",
	tokRem:      "%",
	tokEql:      "==",
	tokNeq:      "!=",
	tokLss:      "<",
	tokLeq:      "<=",
	tokGtr:      ">",
	tokGeq:      ">=",
	tokLAnd:     "&&",
	tokLOr:      "||",
}

// String is the operator's spelling, or a description for the other tokens.
func (t token) String() string { return tokenText[t] }

// keywords are the reserved words of [OAR-EXPR-24].
var keywords = map[string]token{
	"true":  tokTrue,
	"false": tokFalse,
	"in":    tokIn,
}

// isRelop reports whether t is a relop of A.1.
func (t token) isRelop() bool { return t >= tokEql && t <= tokGeq || t == tokIn }
