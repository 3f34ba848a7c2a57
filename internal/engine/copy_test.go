package engine

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// copyStrings are strings encoding/json escapes in every way it has: HTML characters,
// control bytes, U+2028 and U+2029, invalid UTF-8, the encodings of lone and paired
// surrogates (which it takes for invalid UTF-8), and the empty string.
var copyStrings = []string{
	"", "title", "what", "a\"b\\c", "\b\f\n\r\t\x00\x1f\x7f", "<&>", "<script>&amp;</script>",
	"é", "\u2028\u2029", "😀", "\xff", "\xc3", "\xe2\x82", "(\xe2\x82\xac", "\xed\xa0\x80",
	"\xed\xbf\xbf", "\xed\xa0\xbd\xed\xb8\x80", "\xef\xbf\xbd", "\xf4\x90\x80\x80", "title\x00",
}

// checkCopyIsItsMap fails t unless c, made of m, encodes as m does with HTML escaping
// on and off, and as a member that omitempty leaves out when m has no member, and
// unless c reads back from m's encoding as m does.
func checkCopyIsItsMap(t *testing.T, m map[string]string) {
	t.Helper()
	c := CopyOf(m)
	for name, text := range m {
		if got := c.Get(name); got != text {
			t.Errorf("Get(%q) = %q, want %q", name, got, text)
		}
	}
	encode := func(v any, html bool) string { return encodeJSON(t, v, html) }
	for _, html := range []bool{true, false} {
		if got, want := encode(c, html), encode(m, html); got != want {
			t.Errorf("HTML escaping %v: copy encodes as %s, its map as %s", html, got, want)
		}
		type advisoryOfMap struct {
			Code string            `json:"code"`
			Rule string            `json:"rule"`
			Copy map[string]string `json:"copy,omitempty"`
		}
		if got, want := encode(Advisory{Code: "<", Copy: c}, html), encode(advisoryOfMap{Code: "<", Copy: m}, html); got != want {
			t.Errorf("HTML escaping %v: an advisory with the copy encodes as %s, with its map as %s", html, got, want)
		}
	}
	checkReadsAsItsMap(t, m, CopyOf)
}

// encodeJSON is v as a json.Encoder writes it, with HTML escaping on or off.
func encodeJSON(t *testing.T, v any, html bool) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkReadsAsItsMap fails t unless the encoding of m reads into the list type L as
// into a map: the list of the map it reads (of), that map back (Map), nil alike.
func checkReadsAsItsMap[L interface {
	~[]E
	Map() M
}, E comparable, M ~map[string]V, V comparable](t *testing.T, m M, of func(M) L) {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var fromMap M
	var fromList L
	if err := json.Unmarshal(data, &fromMap); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &fromList); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fromList, of(fromMap)) || !maps.Equal(fromList.Map(), fromMap) || (fromList == nil) != (fromMap == nil) {
		t.Errorf("%s reads as the list %+v, as the map %+v", data, fromList, fromMap)
	}
}

// TestCopyEncodesAsItsMap: a copy object is written and read as the map[string]string of
// its members, byte for byte, for every pair of names and texts of copyStrings.
func TestCopyEncodesAsItsMap(t *testing.T) {
	checkCopyIsItsMap(t, nil)
	checkCopyIsItsMap(t, map[string]string{})
	for _, a := range copyStrings {
		for _, b := range copyStrings {
			checkCopyIsItsMap(t, map[string]string{a: b, b: a, a + b: "<" + a + b + ">"})
		}
	}
	all := map[string]string{}
	for i, s := range copyStrings {
		all[s] = copyStrings[len(copyStrings)-1-i]
	}
	checkCopyIsItsMap(t, all)
}

// FuzzCopyEncodesAsItsMap: TestCopyEncodesAsItsMap for any three strings.
func FuzzCopyEncodesAsItsMap(f *testing.F) {
	for i, s := range copyStrings {
		f.Add(s, copyStrings[(i+1)%len(copyStrings)], copyStrings[(i+7)%len(copyStrings)])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		checkCopyIsItsMap(t, map[string]string{a: b, b: c, c: a})
	})
}

// TestCopyReadsAsItsMap: null, an object naming a member twice and an object added to
// a copy read as they do into a map.
func TestCopyReadsAsItsMap(t *testing.T) {
	for _, tt := range []struct {
		into Copy
		data string
	}{
		{nil, `null`},
		{Copy{{"a", "1"}}, `null`},
		{nil, `{}`},
		{nil, `{"b":"1","a":"2","b":"3"}`},
		{Copy{{"a", "1"}, {"c", "2"}}, `{"b":"3","c":"4"}`},
		{nil, `{"\ud800":"\udc00x","<":"\u003c"}`},
	} {
		m, c := tt.into.Map(), slices.Clone(tt.into)
		if err := json.Unmarshal([]byte(tt.data), &m); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.data), &c); err != nil {
			t.Fatal(err)
		}
		if want := CopyOf(m); !slices.Equal(c, want) || (c == nil) != (m == nil) {
			t.Errorf("%s into %q reads as %#v, want %#v", tt.data, tt.into, c, want)
		}
	}
	var c Copy
	if err := json.Unmarshal([]byte(`["a"]`), &c); err == nil {
		t.Errorf("an array reads as the copy %q, want an error", c)
	}
}

// TestCOPY_ACopyObjectHoldsItsMembersInNameOrder: a decision's copy and its advisories'
// hold their members sorted by name, the order of the object encoding/json writes,
// whatever the order of presentation, rendered at once or when the decision carries
// them, and after a copy a monitored rule rendered and dropped.
func TestCOPY_ACopyObjectHoldsItsMembersInNameOrder(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"M","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","enforcement":"monitor","requires":{"profiles":["tool","session"]},
	  "copy":{"title":"{% if principal %}{{ principal_roles }}{% endif %}M title","fix":"M fix"}},
	 {"oar":"1.0","id":"W","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","requires":{"profiles":["tool","session"]},
	  "copy":{"title":"W title","what":"W {{ tool }}","cause":"W cause","why":"W why","fix":"W fix","instead":"W instead"}},
	 {"oar":"1.0","id":"V","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","requires":{"profiles":["tool","session"]},
	  "copy":{"why":"{% if principal %}{{ principal_roles }}{% endif %}V why","instead":"V instead","title":"V title"}}]`)
	d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call", ToolCall: &ToolCall{Name: "read"},
		Facts: map[string]any{"principal": "", "principal_roles": 7}})
	names := func(c Copy) string {
		var out []string
		for _, m := range c {
			out = append(out, m.Name+"="+m.Text)
		}
		return strings.Join(out, " ")
	}
	const v = "instead=V instead title=V title why=V why"
	if d.Decision != "warn" || len(d.Advisories) != 2 || names(d.Copy) != v || names(d.Advisories[0].Copy) != v ||
		names(d.Advisories[1].Copy) != "cause=W cause fix=W fix instead=W instead title=W title what=W read why=W why" {
		t.Errorf("got %s, copy %q, advisories %+v; want warn by V and W, each copy in name order", d.Decision, d.Copy, d.Advisories)
	}
}

// TestOPS3_OfTwoCopyMembersThatFailTheFirstPresentedFailsTheRule: a copy renders its
// members in presentation order (title, what, cause, why, fix, instead), so the rule's
// failure is its title's, though its copy object holds cause first.
func TestOPS3_OfTwoCopyMembersThatFailTheFirstPresentedFailsTheRule(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"W","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_error":"fail_open","requires":{"profiles":["tool","session"]},
	  "copy":{"cause":"{{ principal }}","title":"{{ principal_roles }}"}}]`)
	d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call", ToolCall: &ToolCall{Name: "read"},
		Facts: map[string]any{"principal": 8, "principal_roles": 7}})
	if len(d.Failures) != 1 || !strings.Contains(d.Failures[0].Error, "principal_roles") {
		t.Errorf("failures %+v, want W's, of principal_roles", d.Failures)
	}
}
