package engine

import "testing"

// FuzzGrammarMatchers checks that isID and isNamespace accept exactly what idPattern and
// namespacePattern match ([OAR-DOC-6], [OAR-DOC-7]).
func FuzzGrammarMatchers(f *testing.F) {
	for _, s := range []string{"", "A", "RULE_0001", "a", "_A", "A-B", "AB c", "Ä", "A\n",
		"acme", "acme.security", "a-b.c-d", "-a", "a-", "a..b", ".a", "a.", "a.-b", "A.b", "a_b",
		"0", "0-0.9", "acme.security\n", "é", "a.b.c.d.e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isID(s), idPattern.MatchString(s); got != want {
			t.Errorf("isID(%q) = %v, idPattern says %v", s, got, want)
		}
		if got, want := isNamespace(s), namespacePattern.MatchString(s); got != want {
			t.Errorf("isNamespace(%q) = %v, namespacePattern says %v", s, got, want)
		}
	})
}
