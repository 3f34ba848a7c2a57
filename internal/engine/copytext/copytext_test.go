package copytext

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// symtab is a fact environment for the tests; IDs are assigned in declaration order.
type symtab map[string]types.Symbol

func (s symtab) Lookup(name string) (types.Symbol, bool) {
	sym, ok := s[name]
	return sym, ok
}

// values is a FactEnv keyed by symbol ID.
type values map[int]types.Value

func (v values) Fact(id int) (types.Value, error) {
	val, ok := v[id]
	if !ok {
		return types.Value{}, errors.New("no value")
	}
	return val, nil
}

var testSyms = func() symtab {
	decls := []types.Symbol{
		{Name: "tool", Type: types.String},
		{Name: "policy_denied", Type: types.Bool},
		{Name: "fire_count", Type: types.Int},
		{Name: "prompt_injection_score", Type: types.Double},
		{Name: "principal_roles", Type: types.ListString},
		{Name: "tool_args", Type: types.Map},
		{Name: "secret_matches", Type: types.ListMap},
		{Name: "labels", Type: types.MapStringString},
		{Name: "acme.risk_note", Type: types.String},
		{Name: "tool_arg_string", Func: true, Type: types.String, Arg: types.String},
		{Name: "fire_count_of", Func: true, Type: types.Int, Arg: types.String, RuleRef: true},
		{Name: "not", Type: types.Bool},
	}
	s := symtab{}
	for i, d := range decls {
		d.ID = i
		s[d.Name] = d
	}
	return s
}()

func id(name string) int { return testSyms[name].ID }

// env returns a FactEnv with a value for every declared fact.
func env() values {
	return values{
		id("tool"):                   types.StringValue("shell"),
		id("policy_denied"):          types.BoolValue(true),
		id("fire_count"):             types.IntValue(-42),
		id("prompt_injection_score"): types.DoubleValue(0.875),
		id("principal_roles"):        types.ListStringValue([]string{"admin", "ops"}),
		id("tool_args"):              types.MapValue(map[string]any{"path": "/etc"}),
		id("secret_matches"):         types.ListMapValue(nil),
		id("labels"):                 types.MapStringStringValue(nil),
		id("acme.risk_note"):         types.StringValue("high"),
		id("not"):                    types.BoolValue(false),
	}
}

func mustCompile(t *testing.T, src string) *Template {
	t.Helper()
	tpl, errs := Compile(src, testSyms)
	if len(errs) > 0 {
		t.Fatalf("Compile(%q): %v", src, errs)
	}
	return tpl
}

func render(t *testing.T, src string, e FactEnv) string {
	t.Helper()
	out, err := mustCompile(t, src).Render(e)
	if err != nil {
		t.Fatalf("Render(%q): %v", src, err)
	}
	return out
}

// rejection is one expected load-time diagnostic.
type rejection struct {
	src    string
	clause string
	offset int
	// names must each appear in the message.
	names []string
}

func checkRejections(t *testing.T, cases []rejection) {
	t.Helper()
	for _, tc := range cases {
		tpl, errs := Compile(tc.src, testSyms)
		if tpl != nil || len(errs) == 0 {
			t.Errorf("Compile(%q) accepted, want [%s]", tc.src, tc.clause)
			continue
		}
		e := errs[0]
		if e.Clause != tc.clause || e.Offset != tc.offset {
			t.Errorf("Compile(%q) = [%s] at %d (%s), want [%s] at %d", tc.src, e.Clause, e.Offset, e.Message, tc.clause, tc.offset)
		}
		for _, n := range tc.names {
			if !strings.Contains(e.Message, n) {
				t.Errorf("Compile(%q) message %q does not name %q", tc.src, e.Message, n)
			}
		}
	}
}

func TestCOPY2_UndeclaredAndFunctions(t *testing.T) {
	checkRejections(t, []rejection{
		{src: "{{ tol }}", clause: "OAR-COPY-2", offset: 3, names: []string{`"tol"`, "not a declared fact", "at offset 3"}},
		// A surrogate (from a JSON escape) before the binding is one code point.
		{src: "\xed\xa0\x80{{ tol }}", clause: "OAR-COPY-2", offset: 4, names: []string{`"tol"`, "at offset 4"}},
		{src: "ab {% if polcy_denied %}x{% endif %}", clause: "OAR-COPY-2", offset: 9, names: []string{`"polcy_denied"`}},
		{src: "{% if not polcy %}x{% endif %}", clause: "OAR-COPY-2", offset: 10, names: []string{`"polcy"`}},
		{src: "{{ tool_arg_string }}", clause: "OAR-FACT-27", offset: 3, names: []string{`"tool_arg_string"`, "observation function"}},
		{src: "{% if fire_count_of %}x{% endif %}", clause: "OAR-FACT-27", offset: 6, names: []string{`"fire_count_of"`, "observation function"}},
		{src: "{{ acme.risk }}", clause: "OAR-COPY-2", offset: 3, names: []string{`"acme.risk"`}},
		{src: "{{ true }}", clause: "OAR-COPY-2", offset: 3, names: []string{`"true"`}},
		{src: "{{ null }}", clause: "OAR-COPY-2", offset: 3, names: []string{`"null"`}},
		// Code-point offsets: "é" and the emoji are one code point each.
		{src: "é😀{{ nope }}", clause: "OAR-COPY-2", offset: 5, names: []string{`"nope"`, "at offset 5"}},
	})
}

func TestCOPY2_ReportsEveryName(t *testing.T) {
	_, errs := Compile("{{ a }} and {{ tool }} and {% if b %}{{ c }}{% endif %}", testSyms)
	var got []string
	for _, e := range errs {
		got = append(got, e.Message[:strings.Index(e.Message, " at ")])
	}
	want := []string{`copy names "a"`, `copy names "b"`, `copy names "c"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("diagnostics %q, want %q", got, want)
	}
}

func TestCOPY3_Conditionals(t *testing.T) {
	e := env()
	zero := values{
		id("tool"):                   types.StringValue(""),
		id("policy_denied"):          types.BoolValue(false),
		id("fire_count"):             types.IntValue(0),
		id("principal_roles"):        types.ListStringValue([]string{}),
		id("tool_args"):              types.MapValue(map[string]any{}),
		id("secret_matches"):         types.ListMapValue([]map[string]any{{"start": 0}}),
		id("labels"):                 types.MapStringStringValue(map[string]string{"a": "b"}),
		id("prompt_injection_score"): types.DoubleValue(math.Copysign(0, -1)),
	}
	cases := []struct {
		src        string
		set, unset string
	}{
		{"{% if policy_denied %}denied{% endif %}", "denied", ""},
		{"{% if not policy_denied %}allowed{% endif %}", "", "allowed"},
		{"{% if policy_denied %}A{% else %}B{% endif %}", "A", "B"},
		{"{% if not policy_denied %}A{% else %}B{% endif %}", "B", "A"},
		{"x{% if tool %}[{{ tool }}]{% endif %}y", "x[shell]y", "xy"},
		{"{% if fire_count %}n{% else %}zero{% endif %}", "n", "zero"},
		{"{% if prompt_injection_score %}s{% else %}-0{% endif %}", "s", "-0"},
		{"{% if principal_roles %}r{% else %}none{% endif %}", "r", "none"},
		// Conditionals may test facts of any type, even ones no binding can print.
		{"{% if tool_args %}args{% else %}no args{% endif %}", "args", "no args"},
		{"{% if secret_matches %}found{% else %}clean{% endif %}", "clean", "found"},
		{"{% if labels %}l{% else %}nl{% endif %}", "nl", "l"},
		// Nesting.
		{"{% if policy_denied %}a{% if tool %}b{% else %}c{% endif %}d{% else %}e{% if not tool %}f{% endif %}g{% endif %}", "abd", "efg"},
		{"{% if tool %}{% if fire_count %}{% if policy_denied %}deep{% endif %}{% endif %}{% endif %}", "deep", ""},
		// Empty branches.
		{"{% if tool %}{% else %}{% endif %}", "", ""},
		// A fact whose name is the word not: the only derivation the grammar offers.
		{"{% if not %}N{% else %}M{% endif %}", "M", "M"},
		{"{% if not not %}N{% else %}M{% endif %}", "N", "N"},
	}
	for _, tc := range cases {
		if got := render(t, tc.src, e); got != tc.set {
			t.Errorf("%q with non-zero facts = %q, want %q", tc.src, got, tc.set)
		}
		z := values{id("not"): types.BoolValue(false)}
		for k, v := range zero {
			z[k] = v
		}
		if got := render(t, tc.src, z); got != tc.unset {
			t.Errorf("%q with zero facts = %q, want %q", tc.src, got, tc.unset)
		}
	}
}

func TestCOPY3_RejectsUnderivedConstructs(t *testing.T) {
	checkRejections(t, []rejection{
		{src: "hi {{ tool", clause: "OAR-COPY-3", offset: 3, names: []string{"unclosed binding", `"{{ tool"`, "at offset 3"}},
		{src: "{{ tool }", clause: "OAR-COPY-3", offset: 0, names: []string{"unclosed binding"}},
		{src: "{% if tool", clause: "OAR-COPY-3", offset: 0, names: []string{"unclosed tag"}},
		{src: "{{}}", clause: "OAR-COPY-3", offset: 0, names: []string{"empty binding", `"{{}}"`}},
		{src: "{{ \t }}", clause: "OAR-COPY-3", offset: 0, names: []string{"empty binding"}},
		{src: "{{ tool fire_count }}", clause: "OAR-COPY-3", offset: 0, names: []string{"2 words"}},
		{src: "ab{{ tool | upper }}", clause: "OAR-COPY-3", offset: 2, names: []string{`"{{ tool | upper }}"`, "no filters", "offset 10"}},
		{src: "{{ tool() }}", clause: "OAR-COPY-3", offset: 0, names: []string{`'('`}},
		{src: "{{ 1tool }}", clause: "OAR-COPY-3", offset: 0, names: []string{`'1'`}},
		{src: "{{ acme. }}", clause: "OAR-COPY-3", offset: 0, names: []string{"empty name after a dot"}},
		{src: "{{ acme..x }}", clause: "OAR-COPY-3", offset: 0, names: []string{"empty name after a dot"}},
		{src: "{{ .acme }}", clause: "OAR-COPY-3", offset: 0, names: []string{`'.'`}},
		{src: "{{ tool\u00a0}}", clause: "OAR-COPY-3", offset: 0, names: []string{`'\u00a0'`}},
		{src: "{{{ tool }}}", clause: "OAR-COPY-3", offset: 0, names: []string{`'{'`}},
		{src: "{{ \"tool\" }}", clause: "OAR-COPY-3", offset: 0},
		{src: "{% for r in principal_roles %}{{ r }}{% endfor %}", clause: "OAR-COPY-3", offset: 0, names: []string{`unknown tag "for"`}},
		{src: "{% if tool %}a{% elif policy_denied %}b{% endif %}", clause: "OAR-COPY-3", offset: 14, names: []string{`unknown tag "elif"`, "at offset 14"}},
		{src: "{% ifx %}{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{`unknown tag "ifx"`}},
		{src: "{% IF tool %}{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{`unknown tag "IF"`}},
		{src: "{%%}", clause: "OAR-COPY-3", offset: 0, names: []string{"empty tag"}},
		{src: "{% if %}x{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{"malformed conditional", `"{% if %}"`}},
		{src: "{% if tool policy_denied %}x{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{"malformed conditional"}},
		{src: "{% if not not tool %}x{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{"malformed conditional"}},
		{src: "{% if !tool %}x{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{`'!'`}},
		{src: "{% if tool == \"x\" %}x{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{`'='`}},
		{src: "{% if tool and fire_count %}x{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{"malformed conditional"}},
		{src: "x{% else %}", clause: "OAR-COPY-3", offset: 1, names: []string{`"{% else %}"`, "no {% if %}"}},
		{src: "x{% endif %}", clause: "OAR-COPY-3", offset: 1, names: []string{`"{% endif %}"`, "no {% if %}"}},
		{src: "{% if tool %}a{% else %}b{% else %}c{% endif %}", clause: "OAR-COPY-3", offset: 25, names: []string{"second"}},
		{src: "{% if tool %}a{% endif tool %}", clause: "OAR-COPY-3", offset: 14, names: []string{"endif takes nothing"}},
		{src: "{% if tool %}a{% else if x %}b{% endif %}", clause: "OAR-COPY-3", offset: 14, names: []string{"else takes nothing"}},
		{src: "pre {% if tool %}a", clause: "OAR-COPY-3", offset: 4, names: []string{"no matching {% endif %}", `"{% if tool %}"`}},
		{src: "{% if tool %}{% if fire_count %}a{% endif %}", clause: "OAR-COPY-3", offset: 0, names: []string{"no matching"}},
		{src: "{{ tool }}{# comment #}{{ tool %}", clause: "OAR-COPY-3", offset: 23, names: []string{"unclosed binding"}},
		// Code-point offsets through multi-byte text.
		{src: "naïve 😀 {% endif %}", clause: "OAR-COPY-3", offset: 8, names: []string{"at offset 8"}},
	})
}

func TestCOPY3_ReportsEveryConstruct(t *testing.T) {
	_, errs := Compile("{{ a | b }} {% else %} {{ tool }} {% if tool %}", testSyms)
	var offsets []int
	for _, e := range errs {
		if e.Clause != "OAR-COPY-3" {
			t.Errorf("unexpected %v", e)
		}
		offsets = append(offsets, e.Offset)
	}
	if len(offsets) != 3 || offsets[0] != 0 || offsets[1] != 12 || offsets[2] != 34 {
		t.Errorf("offsets %v, want [0 12 34]: %v", offsets, errs)
	}
}

func TestCOPY4_Interpolation(t *testing.T) {
	cases := []struct {
		fact string
		v    types.Value
		want string
	}{
		{"tool", types.StringValue("shell"), "shell"},
		{"tool", types.StringValue(""), ""},
		{"tool", types.StringValue("{{ tool }} {% if %}"), "{{ tool }} {% if %}"},
		{"tool", types.StringValue("naïve 😀"), "naïve 😀"},
		{"policy_denied", types.BoolValue(true), "true"},
		{"policy_denied", types.BoolValue(false), "false"},
		{"fire_count", types.IntValue(0), "0"},
		{"fire_count", types.IntValue(-42), "-42"},
		{"fire_count", types.IntValue(math.MaxInt64), "9223372036854775807"},
		{"fire_count", types.IntValue(math.MinInt64), "-9223372036854775808"},
		{"prompt_injection_score", types.DoubleValue(0.875), "0.875"},
		{"principal_roles", types.ListStringValue([]string{"admin", "ops", "on call"}), "admin, ops, on call"},
		{"principal_roles", types.ListStringValue([]string{"solo"}), "solo"},
		{"principal_roles", types.ListStringValue([]string{}), ""},
		{"principal_roles", types.ListStringValue(nil), ""},
		{"principal_roles", types.ListStringValue([]string{"", ""}), ", "},
		{"acme.risk_note", types.StringValue("high"), "high"},
	}
	for _, tc := range cases {
		src := "<{{ " + tc.fact + " }}>"
		got := render(t, src, values{id(tc.fact): tc.v})
		if got != "<"+tc.want+">" {
			t.Errorf("%s = %q, want %q", tc.fact, got, "<"+tc.want+">")
		}
	}
}

func TestCOPY4_RejectsUninterpolableTypes(t *testing.T) {
	checkRejections(t, []rejection{
		{src: "{{ tool_args }}", clause: "OAR-COPY-4", offset: 3, names: []string{`"tool_args"`, "type map "}},
		{src: "x {{labels}}", clause: "OAR-COPY-4", offset: 4, names: []string{`"labels"`, "map<string,string>"}},
		{src: "{{ secret_matches }}", clause: "OAR-COPY-4", offset: 3, names: []string{`"secret_matches"`, "list<map>"}},
	})
}

func TestCOPY5_Refs(t *testing.T) {
	tpl := mustCompile(t, "{% if policy_denied %}{{ tool }} {{ fire_count }}{% else %}{{ tool }}{% endif %}"+
		"{% if not secret_matches %}{{ acme.risk_note }}{% endif %}{{ policy_denied }}")
	var got []string
	for _, s := range tpl.Refs() {
		if s != testSyms[s.Name] {
			t.Errorf("ref %+v is not the declared symbol %+v", s, testSyms[s.Name])
		}
		got = append(got, s.Name)
	}
	want := "policy_denied tool fire_count secret_matches acme.risk_note"
	if strings.Join(got, " ") != want {
		t.Errorf("Refs() = %v, want %s", got, want)
	}
	if refs := mustCompile(t, "no bindings {at all}").Refs(); len(refs) != 0 {
		t.Errorf("Refs() of plain text = %v", refs)
	}
	// The result is the caller's to keep.
	tpl.Refs()[0].Name = "changed"
	if tpl.Refs()[0].Name != "policy_denied" {
		t.Error("Refs() exposes the template's own slice")
	}
}

func TestCOPY8_Whitespace(t *testing.T) {
	e := env()
	for _, src := range []string{"{{tool}}", "{{ tool }}", "{{\ttool\t}}", "{{\r\n tool \n}}", "{{   tool}}"} {
		if got := render(t, src, e); got != "shell" {
			t.Errorf("%q = %q, want shell", src, got)
		}
	}
	for _, src := range []string{
		"{%if policy_denied%}y{%else%}n{%endif%}",
		"{%   if   not\n\tnot  %}y{%\relse\n%}n{% endif\t%}",
		"{%\nif policy_denied\n%}y{%\nendif\n%}",
	} {
		if got := render(t, src, e); got != "y" {
			t.Errorf("%q = %q, want y", src, got)
		}
	}
}

func TestCOPY10_Doubles(t *testing.T) {
	cases := []struct {
		d    float64
		want string
	}{
		{1, "1.0"},
		{0.0000001, "0.0000001"},
		{-2.5, "-2.5"},
		{0, "0.0"},
		{math.Copysign(0, -1), "0.0"},
		{1e21, "1000000000000000000000.0"},
		{0.1, "0.1"},
		{1.0 / 3, "0.3333333333333333"},
	}
	for _, tc := range cases {
		got := render(t, "{{ prompt_injection_score }}", values{id("prompt_injection_score"): types.DoubleValue(tc.d)})
		if got != tc.want {
			t.Errorf("%v renders %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestCOPY11_RenderFailures(t *testing.T) {
	providerErr := errors.New("detector timed out")
	failing := failEnv{id("fire_count"): providerErr}
	cases := []struct {
		src  string
		env  FactEnv
		want error
	}{
		{"a {{ fire_count }} b", failing, providerErr},
		{"{% if fire_count %}x{% endif %}", failing, providerErr},
		{"{% if policy_denied %}{{ tool }} {{ fire_count }}{% endif %}", failing, providerErr},
	}
	for _, tc := range cases {
		out, err := mustCompile(t, tc.src).Render(tc.env)
		if !errors.Is(err, tc.want) || out != "" {
			t.Errorf("%q rendered %q, %v; want error wrapping %v", tc.src, out, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "fire_count") {
			t.Errorf("%q error %q does not name the fact", tc.src, err)
		}
	}
	// A branch not taken does not read its facts.
	out, err := mustCompile(t, "{% if not tool %}{{ fire_count }}{% endif %}ok").Render(failing)
	if err != nil || out != "ok" {
		t.Errorf("untaken branch: %q, %v", out, err)
	}
	// A value of the wrong type is refused, never coerced ([OAR-FACT-26]).
	_, err = mustCompile(t, "{{ fire_count }}").Render(values{id("fire_count"): types.StringValue("7")})
	var te *types.TypeError
	if !errors.As(err, &te) || te.Want != types.Int {
		t.Errorf("wrong runtime type: %v, want a TypeError for int", err)
	}
	_, err = mustCompile(t, "{% if tool %}{% endif %}").Render(values{id("tool"): types.BoolValue(true)})
	if !errors.As(err, &te) || te.Want != types.String {
		t.Errorf("wrong runtime type in a conditional: %v, want a TypeError for string", err)
	}
}

// failEnv fails for the listed IDs and serves env() otherwise.
type failEnv map[int]error

func (f failEnv) Fact(id int) (types.Value, error) {
	if err, ok := f[id]; ok {
		return types.Value{}, err
	}
	return env().Fact(id)
}

func TestLiterals(t *testing.T) {
	e := env()
	cases := []struct{ src, want string }{
		{"", ""},
		{"plain text", "plain text"},
		{"{", "{"},
		{"}", "}"},
		{"a { b } c", "a { b } c"},
		{"}} and %} are literal", "}} and %} are literal"},
		{"{ {tool} }", "{ {tool} }"},
		{"{ %if% }", "{ %if% }"},
		{"ends with {", "ends with {"},
		{"{{ tool }}{", "shell{"},
		{"{}{{tool}}{}", "{}shell{}"},
		{"{{tool}}}}", "shell}}"},
		{"😀{{ tool }}é", "😀shellé"},
		{"line\n{{ tool }}\n", "line\nshell\n"},
	}
	for _, tc := range cases {
		if got := render(t, tc.src, e); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestDiagnosticShape(t *testing.T) {
	long := strings.Repeat("ü", 300) + "{{ nope }}"
	_, errs := Compile(long, testSyms)
	if len(errs) != 1 {
		t.Fatalf("got %v", errs)
	}
	e := errs[0]
	want := diag.Error{Clause: "OAR-COPY-2", Index: -1, Field: "", Value: diag.Truncate(long), Offset: 303}
	if e.Clause != want.Clause || e.Index != want.Index || e.Field != want.Field || e.Value != want.Value || e.Offset != want.Offset || e.Rule != "" {
		t.Errorf("diagnostic %+v, want %+v", *e, want)
	}
	if !strings.HasSuffix(e.Value, "…") {
		t.Errorf("Value not truncated: %q", e.Value)
	}
	// A construct named in a message is shortened too.
	_, errs = Compile("{{ "+strings.Repeat("a ", 100)+"}}", testSyms)
	if len(errs) != 1 || len(errs[0].Message) > 200 {
		t.Errorf("long construct message: %v", errs)
	}
}

func BenchmarkRender(b *testing.B) {
	tpl, errs := Compile("Tool {{ tool }} was refused{% if policy_denied %} by policy{% endif %} after {{ fire_count }} attempts "+
		"(score {{ prompt_injection_score }}, roles {{ principal_roles }}).", testSyms)
	if errs != nil {
		b.Fatal(errs)
	}
	e := env()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.Render(e); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"", "plain {", "{{ tool }}", "{{tool}}{{", "{% if not policy_denied %}a{% else %}b{% endif %}",
		"{% if tool %}{% if fire_count %}x{% endif %}", "{{ a | b }}", "{% for %}", "é😀{{ principal_roles }}",
		"{{ acme.risk_note }}{% endif %}{% else %}", "{{{ tool }}}", "{%%}{{}}",
	} {
		f.Add(seed)
	}
	e := env()
	f.Fuzz(func(t *testing.T, src string) {
		tpl, errs := Compile(src, testSyms)
		if (tpl == nil) == (len(errs) == 0) {
			t.Fatalf("Compile(%q) returned template %v with %d diagnostics", src, tpl != nil, len(errs))
		}
		n := utf8.RuneCountInString(src)
		for _, d := range errs {
			at := codepoint.Skip(src, d.Offset)
			switch {
			case d.Clause != "OAR-COPY-2" && d.Clause != "OAR-COPY-3" && d.Clause != "OAR-COPY-4" && d.Clause != "OAR-FACT-27":
				t.Fatalf("Compile(%q): unexpected clause in %v", src, d)
			case d.Offset < 0 || d.Offset >= n:
				t.Fatalf("Compile(%q): offset %d outside the source: %v", src, d.Offset, d)
			case !strings.Contains(d.Message, "at offset "+strconv.Itoa(d.Offset)):
				t.Fatalf("Compile(%q): message does not give the offset: %v", src, d)
			case at == len(src) || d.Clause == "OAR-COPY-3" && src[at] != '{' || d.Clause != "OAR-COPY-3" && !isNameStart(src[at]):
				t.Fatalf("Compile(%q): offset %d is not at the construct or name: %v", src, d.Offset, d)
			}
		}
		if tpl == nil {
			return
		}
		out, err := tpl.Render(e)
		if err != nil {
			t.Fatalf("Render(%q): %v", src, err)
		}
		if !strings.Contains(src, "{{") && !strings.Contains(src, "{%") && out != src {
			t.Fatalf("literal %q rendered as %q", src, out)
		}
	})
}

// BenchmarkCompileManyDiagnostics compiles a template with one diagnostic per
// binding, so the cost of locating diagnostics shows against the source length.
func BenchmarkCompileManyDiagnostics(b *testing.B) {
	src := strings.Repeat("{{ zz }} ", 20000)
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := Compile(src, testSyms); len(errs) != 20000 {
			b.Fatalf("got %d diagnostics, want 20000", len(errs))
		}
	}
}
