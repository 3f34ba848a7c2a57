package engine

import (
	"encoding/json"
	"testing"
)

// configCheckRules share bare ids across namespaces (A) and hold a mandatory rule (M),
// so configuration documents can be ambiguous ([OAR-CFG-8]) and refused for a
// mandatory rule ([OAR-CFG-5]).
const configCheckRules = `[
 {"oar":"1.0","namespace":"x.sec","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"},
 {"oar":"1.0","namespace":"y.sec","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"},
 {"oar":"1.0","namespace":"x.sec","id":"M","kind":"invariant","anchor":"tool.pre_invoke","effect":"block","mandatory":true},
 {"oar":"1.0","namespace":"x.sec","id":"B","kind":"schema","anchor":"model.output","effect":"nudge","enforcement":"monitor"}]`

// FuzzConfigChecker: a ConfigChecker, fresh or already used on other documents,
// reports what Configure reports for the document alone, and what Configure reports
// for it after other documents that apply; Applies says it applies when, and only
// when, there is nothing to report. Bundle assembly checks configuration
// documents one by one on that ground.
func FuzzConfigChecker(f *testing.F) {
	for _, s := range []string{
		`{"oar_config":"1.0","enforcement":{"A":"enforce"}}`,
		`{"oar_config":"1.0","enforcement":{"x.sec/A":"monitor","B":"off","x.sec/M":"monitor"},"disable":["x.sec/M","y.sec/A","nope"]}`,
		`{"oar_config":"1.0","disable":["x.sec/B","x.sec/B","Bee"]}`,
		`{"oar_config":"1.0","enforcement":{"B":"enforce","x.sec/B":"off"}}`,
		`{"oar_config":"2.0","disable":"x.sec/B","extra":1}`,
		`[1,2]`,
	} {
		f.Add([]byte(s))
	}
	docs, err := DecodeDocuments([]byte(configCheckRules))
	if err != nil {
		f.Fatal(err)
	}
	rs, errs := LoadRules(fuzzCap(f), docs)
	if len(errs) > 0 {
		f.Fatal(errs)
	}
	applying := []any{
		map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"x.sec/A": "off", "y.sec/A": "monitor"}},
		map[string]any{"oar_config": "1.0", "disable": []any{"x.sec/B"}},
	}
	used := NewConfigChecker(rs)
	for _, doc := range applying {
		if l := used.Errors(doc); len(l) > 0 {
			f.Fatalf("%v: %v", doc, l)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeDocuments(data)
		if err != nil || len(docs) != 1 {
			return
		}
		doc := docs[0]
		_, want := Configure(rs, []any{doc})
		if got := NewConfigChecker(rs).Errors(doc); !sameDiagnostics(got, want) {
			t.Fatalf("a fresh checker reports %v, Configure %v", got, want)
		}
		if got := used.Errors(doc); !sameDiagnostics(got, want) {
			t.Fatalf("a used checker reports %v, Configure %v", got, want)
		}
		if got := used.Applies(doc); got != (len(want) == 0) {
			t.Fatalf("Applies says %v; Configure reports %v", got, want)
		}
		if got := used.Errors(doc); !sameDiagnostics(got, want) {
			t.Fatalf("after Applies the checker reports %v, Configure %v", got, want)
		}
		_, after := Configure(rs, append(applying[:len(applying):len(applying)], doc))
		for _, e := range after {
			if e.Index != len(applying) {
				t.Fatalf("a document that applies alone is refused after another: %v", e)
			}
			e.Index = 0
		}
		if !sameDiagnostics(after, want) {
			t.Fatalf("after other documents Configure reports %v, alone %v", after, want)
		}
	})
}

func sameDiagnostics(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
