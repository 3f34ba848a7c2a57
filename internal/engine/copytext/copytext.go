// Package copytext compiles and renders OAR copy members: the copy_text grammar of
// Appendix C (Copy bindings), with its bindings ([OAR-COPY-2], [OAR-COPY-4]),
// conditionals ([OAR-COPY-3]), insignificant whitespace inside delimiters
// ([OAR-COPY-8]), the facts a member references ([OAR-COPY-5]) and the canonical
// double form ([OAR-COPY-10]).
//
// Compile does all checking at load time and turns a member into a flat program of
// literal, binding and branch instructions, so Render is a single pass into one
// strings.Builder. Render never substitutes a zero for a failed observation: an error
// from the fact environment is returned wrapped, and the engine decides what to do with
// the copy object ([OAR-COPY-11]).
//
// Lexical decisions the grammar leaves open, made here once:
//   - "{{" and "{%" always open a construct wherever they occur, so "{{{ a }}}" is a
//     malformed binding rather than a literal "{" followed by a binding.
//   - letter and digit are the ASCII letters and digits.
//   - words inside a construct are lexed greedily, as [OAR-EXPR-24] lexes names, so
//     "{% ifx %}" is the unknown tag ifx, and "{% if notice %}" tests the fact notice.
//     "{% if not %}" tests a fact named not, the only derivation the grammar offers.
package copytext

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// FactEnv supplies fact values at render time. The engine has already checked each
// value against its declared type ([OAR-FACT-26]); an error is a fact-provider failure.
type FactEnv interface {
	Fact(id int) (types.Value, error)
}

// Template is a compiled copy member. It is immutable and safe for concurrent use.
type Template struct {
	prog []instr
	refs []types.Symbol
	// sizeHint is the byte length the rendered text usually needs.
	sizeHint int
}

type opcode uint8

const (
	// opText writes text.
	opText opcode = iota
	// opBind writes the value of refs[ref].
	opBind
	// opBranch jumps to target unless the conditional's test holds.
	opBranch
	// opJump jumps to target; it ends an if branch that has an else.
	opJump
)

type instr struct {
	op     opcode
	negate bool
	ref    int
	target int
	text   string
}

// Refs lists every fact the template names, in bindings and conditionals alike, once
// each and in order of first use ([OAR-COPY-5]).
func (t *Template) Refs() []types.Symbol { return slices.Clone(t.refs) }

// Render substitutes the bindings of t against env ([OAR-COPY-1], [OAR-COPY-4]).
// A failure of env is returned wrapped and nothing is rendered ([OAR-COPY-11]).
func (t *Template) Render(env FactEnv) (string, error) {
	b, err := t.AppendRender(make([]byte, 0, t.sizeHint), env)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendRender is Render appending the text to dst, so a caller rendering many
// templates can reuse one buffer. On failure it returns dst unchanged in length.
func (t *Template) AppendRender(dst []byte, env FactEnv) ([]byte, error) {
	start := len(dst)
	b := dst
	for pc := 0; pc < len(t.prog); {
		in := &t.prog[pc]
		switch in.op {
		case opText:
			b = append(b, in.text...)
		case opBind:
			v, err := t.fact(env, in.ref)
			if err != nil {
				return b[:start], err
			}
			b = appendValue(b, v)
		case opBranch:
			v, err := t.fact(env, in.ref)
			if err != nil {
				return b[:start], err
			}
			if v.IsZero() != in.negate {
				pc = in.target
				continue
			}
		case opJump:
			pc = in.target
			continue
		}
		pc++
	}
	return b, nil
}

// fact reads refs[i] from env and refuses a value of another type rather than
// coercing it ([OAR-FACT-26]).
func (t *Template) fact(env FactEnv, i int) (types.Value, error) {
	sym := t.refs[i]
	v, err := env.Fact(sym.ID)
	if err != nil {
		return types.Value{}, fmt.Errorf("copy fact %s: %w", sym.Name, err)
	}
	if v.Kind != sym.Type {
		return types.Value{}, fmt.Errorf("copy fact %s: %w", sym.Name, &types.TypeError{Want: sym.Type, Got: v.Kind.String()})
	}
	return v, nil
}

// appendValue interpolates v as [OAR-COPY-4] prescribes.
func appendValue(b []byte, v types.Value) []byte {
	switch v.Kind {
	case types.String:
		b = append(b, v.Str()...)
	case types.Bool:
		b = strconv.AppendBool(b, v.Bool())
	case types.Int:
		b = strconv.AppendInt(b, v.Int(), 10)
	case types.Double:
		b = types.AppendDouble(b, v.Double())
	case types.ListString:
		for i, s := range v.List() {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, s...)
		}
	}
	return b
}

// interpolable reports whether a binding may name a fact of type k ([OAR-COPY-4]).
func interpolable(k types.Kind) bool {
	switch k {
	case types.String, types.Bool, types.Int, types.Double, types.ListString:
		return true
	}
	return false
}

// Compile parses src by the copy_text grammar and checks every name it uses against
// syms. It returns every diagnostic it finds, ordered by offset, and a nil template
// when there is any. Each diagnostic has Index -1 and an empty Field for the caller to
// fill, Value set to (a truncation of) src and Offset set to the code-point offset of
// the offending construct or identifier.
func Compile(src string, syms types.Symbols) (*Template, diag.List) {
	c := &compiler{src: src, syms: syms, refIndex: map[string]int{}}
	c.run()
	if len(c.errs) > 0 {
		c.errs.Sort()
		return nil, c.errs
	}
	hint := c.textLen
	for _, in := range c.prog {
		if in.op == opBind {
			hint += 16
		}
	}
	return &Template{prog: c.prog, refs: c.refs, sizeHint: hint}, nil
}

type compiler struct {
	src      string
	syms     types.Symbols
	errs     diag.List
	prog     []instr
	refs     []types.Symbol
	refIndex map[string]int
	open     []frame
	textLen  int
	// at is the byte offset that offset converted last and atCount its code-point
	// offset, so that converting the next one counts only the bytes in between.
	at, atCount int
}

// frame is a conditional whose endif has not been seen yet.
type frame struct {
	start     int // byte offset of its "{%"
	construct string
	branch    int // index of its opBranch
	jump      int // index of the opJump its else added, or -1
	offset    int // code-point offset of start, or -1 until frameOffset sets it
}

// word is one lexed word inside a construct.
type word struct {
	text string
	at   int // byte offset
}

func (c *compiler) run() {
	src := c.src
	lit := 0
	for i := 0; i+1 < len(src); {
		if src[i] == '{' && (src[i+1] == '{' || src[i+1] == '%') {
			c.text(src[lit:i])
			i = c.construct(i)
			lit = i
			continue
		}
		i++
	}
	if lit < len(src) {
		c.text(src[lit:])
	}
	for _, f := range c.open {
		c.fail("OAR-COPY-3", f.start, "conditional %s at offset %d has no matching {%% endif %%}",
			quote(f.construct), c.offset(f.start))
	}
}

// text appends a literal.
func (c *compiler) text(s string) {
	if s == "" {
		return
	}
	c.textLen += len(s)
	c.prog = append(c.prog, instr{op: opText, text: s})
}

// construct compiles the "{{" or "{%" construct at byte offset i and returns the
// offset just past it.
func (c *compiler) construct(i int) int {
	binding := c.src[i+1] == '{'
	closer, kind := "%}", "tag"
	if binding {
		closer, kind = "}}", "binding"
	}
	words, end, problem := c.lex(i+2, closer)
	if problem != "" {
		return c.malformed(i, closer, kind, problem)
	}
	construct := c.src[i:end]
	if binding {
		switch len(words) {
		case 0:
			c.fail("OAR-COPY-3", i, "empty binding %s at offset %d: a binding names exactly one fact",
				quote(construct), c.offset(i))
		case 1:
			if ref, ok := c.resolve(words[0], true); ok {
				c.prog = append(c.prog, instr{op: opBind, ref: ref})
			}
		default:
			c.fail("OAR-COPY-3", i, "binding %s at offset %d names %d words; a binding names exactly one fact",
				quote(construct), c.offset(i), len(words))
		}
		return end
	}
	if len(words) == 0 {
		c.fail("OAR-COPY-3", i, "empty tag %s at offset %d: the copy language has only if, else and endif",
			quote(construct), c.offset(i))
		return end
	}
	switch words[0].text {
	case "if":
		c.ifTag(i, construct, words[1:])
	case "else", "endif":
		if len(words) > 1 {
			c.fail("OAR-COPY-3", i, "tag %s at offset %d: %s takes nothing after it",
				quote(construct), c.offset(i), words[0].text)
		}
		// Even a malformed else or endif keeps its place in the structure, so
		// one mistake is not reported again as an unmatched if.
		if words[0].text == "else" {
			c.elseTag(i, construct)
		} else {
			c.endifTag(i, construct)
		}
	default:
		c.fail("OAR-COPY-3", i, "unknown tag %q in %s at offset %d: the copy language has only if, else and endif",
			words[0].text, quote(construct), c.offset(i))
	}
	return end
}

// malformed reports a construct the lexer could not read and returns where to resume:
// after its closing delimiter, or the end of the source when there is none.
func (c *compiler) malformed(i int, closer, kind, problem string) int {
	rest := strings.Index(c.src[i+2:], closer)
	if rest < 0 {
		c.fail("OAR-COPY-3", i, "unclosed %s %s at offset %d: no closing %s",
			kind, quote(c.src[i:]), c.offset(i), closer)
		return len(c.src)
	}
	end := i + 2 + rest + 2
	c.fail("OAR-COPY-3", i, "malformed %s %s at offset %d: %s",
		kind, quote(c.src[i:end]), c.offset(i), problem)
	return end
}

// lex reads the words of a construct from byte offset j up to closer. It returns the
// words and the offset past closer, or a description of the first thing it could not
// read.
func (c *compiler) lex(j int, closer string) (words []word, end int, problem string) {
	src := c.src
	for {
		for j < len(src) && isSpace(src[j]) {
			j++
		}
		switch {
		case j >= len(src):
			return nil, 0, "unclosed"
		case strings.HasPrefix(src[j:], closer):
			return words, j + len(closer), ""
		case isNameStart(src[j]):
			k, ok := scanIdentifier(src, j)
			if !ok {
				return nil, 0, fmt.Sprintf("identifier %q at offset %d has an empty name after a dot",
					src[j:k], c.offset(j))
			}
			words = append(words, word{text: src[j:k], at: j})
			j = k
		default:
			r, _ := utf8.DecodeRuneInString(src[j:])
			hint := ""
			if r == '|' {
				hint = " (the copy language has no filters)"
			}
			return nil, 0, fmt.Sprintf("unexpected %q at offset %d%s", r, c.offset(j), hint)
		}
	}
}

// scanIdentifier reads identifier = name { "." name } greedily from j. ok is false when
// a dot is not followed by a name; k is then just past the dot.
func scanIdentifier(s string, j int) (k int, ok bool) {
	k = j
	for {
		if k >= len(s) || !isNameStart(s[k]) {
			return k, false
		}
		k++
		for k < len(s) && isNameChar(s[k]) {
			k++
		}
		if k >= len(s) || s[k] != '.' {
			return k, true
		}
		k++
	}
}

func (c *compiler) ifTag(i int, construct string, args []word) {
	var negate bool
	var name word
	switch {
	case len(args) == 1:
		name = args[0]
	case len(args) == 2 && args[0].text == "not":
		negate, name = true, args[1]
	default:
		c.fail("OAR-COPY-3", i, "malformed conditional %s at offset %d: expected {%% if identifier %%} or {%% if not identifier %%}",
			quote(construct), c.offset(i))
		// Keep the structure so the matching else and endif are not reported too.
		c.open = append(c.open, frame{start: i, construct: construct, branch: -1, jump: -1, offset: -1})
		return
	}
	ref, ok := c.resolve(name, false)
	branch := -1
	if ok {
		branch = len(c.prog)
		c.prog = append(c.prog, instr{op: opBranch, ref: ref, negate: negate})
	}
	c.open = append(c.open, frame{start: i, construct: construct, branch: branch, jump: -1, offset: -1})
}

func (c *compiler) elseTag(i int, construct string) {
	if len(c.open) == 0 {
		c.fail("OAR-COPY-3", i, "%s at offset %d has no {%% if %%} to belong to", quote(construct), c.offset(i))
		return
	}
	f := &c.open[len(c.open)-1]
	if f.jump >= 0 {
		c.fail("OAR-COPY-3", i, "second %s at offset %d in conditional %s at offset %d",
			quote(construct), c.offset(i), quote(f.construct), c.frameOffset())
		return
	}
	f.jump = len(c.prog)
	c.prog = append(c.prog, instr{op: opJump})
	if f.branch >= 0 {
		c.prog[f.branch].target = len(c.prog)
	}
}

func (c *compiler) endifTag(i int, construct string) {
	if len(c.open) == 0 {
		c.fail("OAR-COPY-3", i, "%s at offset %d has no {%% if %%} to close", quote(construct), c.offset(i))
		return
	}
	f := c.open[len(c.open)-1]
	c.open = c.open[:len(c.open)-1]
	if f.jump >= 0 {
		c.prog[f.jump].target = len(c.prog)
	} else if f.branch >= 0 {
		c.prog[f.branch].target = len(c.prog)
	}
}

// resolve looks a name up in the fact environment ([OAR-COPY-2]) and, for a binding,
// checks that its type can be interpolated ([OAR-COPY-4]). It returns the index of the
// name in c.refs.
func (c *compiler) resolve(w word, binding bool) (int, bool) {
	sym, found := c.syms.Lookup(w.text)
	switch {
	case !found:
		c.fail("OAR-COPY-2", w.at, "copy names %q at offset %d, which is not a declared fact", w.text, c.offset(w.at))
		if env, ok := c.syms.(types.Listing); ok {
			c.errs[len(c.errs)-1].Suggest(w.text, func(yield func(string) bool) {
				for sym := range env.All() {
					if !sym.Func && !yield(sym.Name) {
						return
					}
				}
			})
		}
		return 0, false
	case sym.Func:
		c.fail("OAR-FACT-27", w.at, "copy names %q at offset %d, which is an observation function; copy can name only facts ([OAR-COPY-2])",
			w.text, c.offset(w.at))
		return 0, false
	case binding && !interpolable(sym.Type):
		c.fail("OAR-COPY-4", w.at, "binding of %q at offset %d: a fact of type %s cannot be interpolated (only string, bool, int, double and list<string> can)",
			w.text, c.offset(w.at), sym.Type)
		return 0, false
	}
	if ref, seen := c.refIndex[w.text]; seen {
		return ref, true
	}
	c.refIndex[w.text] = len(c.refs)
	c.refs = append(c.refs, sym)
	return len(c.refs) - 1, true
}

func (c *compiler) fail(clause string, at int, format string, args ...any) {
	c.errs.Add(&diag.Error{
		Clause:  clause,
		Index:   -1,
		Value:   diag.Truncate(c.src),
		Offset:  c.offset(at),
		Message: fmt.Sprintf(format, args...),
	})
}

// offset converts a byte offset into src to a code-point offset, counting from the
// offset converted last rather than from the start of src, so a template with a
// diagnostic per construct costs its length and not its square. Offsets mostly come in
// source order, but not always: a malformed construct's comes after those inside it
// that its message gives, a second else names its conditional's, and unclosed
// conditionals are reported at the end; so going back is counted too. Every offset
// asked for is at or just past an ASCII byte, which is never part of a longer code
// point, so the counts on either side of it add up to the count from the start.
func (c *compiler) offset(at int) int {
	if at >= c.at {
		c.atCount += codepoint.Count(c.src[c.at:at])
	} else {
		c.atCount -= codepoint.Count(c.src[at:c.at])
	}
	c.at = at
	return c.atCount
}

// frameOffset is the code-point offset of the innermost open conditional. It converts
// every open conditional not yet converted, outermost first, so that nested
// conditionals each with a second else count back over the source once, not once each.
func (c *compiler) frameOffset() int {
	k := len(c.open)
	for k > 0 && c.open[k-1].offset < 0 {
		k--
	}
	for ; k < len(c.open); k++ {
		c.open[k].offset = c.offset(c.open[k].start)
	}
	return c.open[len(c.open)-1].offset
}

// quote names a construct in a message, shortened when it is long.
func quote(s string) string {
	const limit = 60
	if utf8.RuneCountInString(s) > limit {
		n := 0
		for i := range s {
			if n == limit {
				s = s[:i] + "…"
				break
			}
			n++
		}
	}
	return strconv.Quote(s)
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func isNameStart(b byte) bool { return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

func isNameChar(b byte) bool { return isNameStart(b) || b >= '0' && b <= '9' }
