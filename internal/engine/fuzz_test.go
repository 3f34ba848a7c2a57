package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

const fuzzCapability = `{"oar_capability_version":"1.0","host":"oar.test",
 "anchors":{"core":{"tool.pre_invoke":"tool.pre_invoke","model.output":"gw.output"},
  "unsupported":["tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.tool_result"],
  "host":["gw.render"]},
 "profiles":["tool","session","content","secrets"],"detectors":["detector://noop","detector://error","detector://fixture"],
 "activity_window":4,"supports_transform":true,"expression_nodes_max":512,
 "host_facts":[{"name":"oar.test.spans","type":"list<map>"},{"name":"oar.test.flag","type":"(string) -> bool"}]}`

func fuzzCap(t testing.TB) *Capability {
	t.Helper()
	doc, err := DecodeJSON([]byte(fuzzCapability))
	if err != nil {
		t.Fatal(err)
	}
	c, errs := LoadCapability(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return c
}

// clauseID is the form of a clause identifier a diagnostic carries.
var clauseID = regexp.MustCompile(`^OAR-[A-Z]+-[0-9]+$`)

// citedAtEnd matches an error message that ends in the clause it cites.
var citedAtEnd = regexp.MustCompile(`\[OAR-[A-Z]+-[0-9]+\]$`)

// checkDiagnostic checks that e names a clause, and the document it concerns by an
// index among docs (-1 for none, the only choice when docs is 0).
func checkDiagnostic(t *testing.T, e *diag.Error, docs int) {
	t.Helper()
	if !clauseID.MatchString(e.Clause) {
		t.Fatalf("diagnostic without a clause: %v", e)
	}
	if e.Index < -1 || e.Index >= docs {
		t.Fatalf("diagnostic of document %d among %d: %v", e.Index, docs, e)
	}
	if e.Offset < -1 {
		t.Fatalf("diagnostic at offset %d: %v", e.Offset, e)
	}
}

// FuzzLoadRules feeds arbitrary bytes through decoding, loading, configuration and one
// evaluation: no input may panic, every diagnostic names a clause and a document of
// the set, checking as admission does (CheckRulesKept) refuses and warns exactly as
// loading does, the documents in reverse order load or not alike and decide alike
// ([OAR-DOC-31]), and selection decides alike with plans or without, with the list
// index or without.
func FuzzLoadRules(f *testing.F) {
	seeds := []string{
		`{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"block"}`,
		`[{"oar":"1.0","id":"A","namespace":"x","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","overrides":["B"]},{"oar":"1.0","id":"B","namespace":"x","kind":"schema","anchor":"tool.pre_invoke","effect":"block","overrides":["A"]}]`,
		"oar: \"1.0\"\nid: T\nkind: detector\ndetector: {ref: detector://fixture}\nanchor: model.output\nrequires: {profiles: [secrets]}\neffect: transform\ntransform: {action: redact, target: secret_matches}\n",
		"oar: 1.0\nid: X\n",
		`{"oar":"1.0","id":"C","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","when":"fire_count_of(\"C\") > 1 && tool == 'x'","requires":{"profiles":["tool"]},"on_fire":["increment_counter","publish_event"],"counter_scope":"tool_args_fingerprint","copy":{"what":"{% if tool %}{{ tool }}{% else %}none{% endif %}"}}`,
		`{"oar":"1.0","id":"F","kind":"policy","anchor":"tool.pre_invoke","effect":"nudge","flow":["a","b"],"selector":{"tool":["read"]},"requires":{"profiles":["tool"]}}`,
		`{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"block","oar":"1.0"}`,
		`[{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","selector":{"principal_roles":["sre","dev"]},"requires":{"profiles":["session"]}},{"oar":"1.0","id":"B","kind":"schema","anchor":"tool.pre_invoke","effect":"nudge","selector":{"principal_roles":["dev","sre"]},"requires":{"profiles":["session"]}},{"oar":"1.0","id":"C","kind":"policy","anchor":"tool.pre_invoke","effect":"block","selector":{"principal_roles":[],"tool":["read"]},"requires":{"profiles":["session","tool"]}},{"oar":"1.0","id":"D","kind":"invariant","anchor":"tool.pre_invoke","effect":"allow","selector":{"tool":["read"],"principal_roles":["admin","a","b","c","dev"]},"requires":{"profiles":["session","tool"]},"overrides":["A"]}]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	c := fuzzCap(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeDocuments(data)
		if err != nil {
			return
		}
		rs, errs := LoadRules(c, docs)
		for _, e := range errs {
			checkDiagnostic(t, e, len(docs))
		}
		// Admission refuses exactly what the engine refuses, with the same
		// diagnostics and warnings, whether it checks the conditions afresh or takes
		// them from those kept by an earlier check of the same set.
		loaded, _ := json.Marshal(errs)
		var loadWarnings diag.List
		if rs != nil {
			loadWarnings = rs.Warnings
		}
		store := &mapStore{refs: map[string][]types.Symbol{}}
		for round := range 2 {
			warnings, checked := CheckRulesKept(c, docs, store)
			if got, _ := json.Marshal(checked); !bytes.Equal(got, loaded) {
				t.Fatalf("check %d refuses %s, loading %s", round, got, loaded)
			}
			if got, want := fmt.Sprint(warnings), fmt.Sprint(loadWarnings); got != want {
				t.Fatalf("check %d warns %s, loading %s", round, got, want)
			}
		}
		reversed := slices.Clone(docs)
		slices.Reverse(reversed)
		rrs, _ := LoadRules(c, reversed)
		if (rs == nil) != (rrs == nil) {
			t.Fatalf("the set loads %v, in reverse order %v", rs != nil, rrs != nil)
		}
		if rs == nil {
			return
		}
		p, errs := Configure(rs, nil)
		if len(errs) > 0 {
			t.Fatalf("an empty configuration was refused: %v", errs)
		}
		merged := withoutPlans(p)
		inReverse, _ := Configure(rrs, nil)
		tested := withoutListIndex(p)
		alone := withoutOutcomes(p)
		for _, anchor := range []string{"tool.pre_invoke", "gw.output", "gw.render"} {
			// principal_roles absent, with members some clause lists, and of the wrong type.
			for _, facts := range []map[string]any{nil, {"principal_roles": []any{"admin", "dev"}}, {"principal_roles": "dev"}} {
				occ := &Occurrence{Anchor: anchor, SessionID: "s", Content: "héllo wörld", HasContent: true, Facts: facts,
					ToolCall: &ToolCall{Name: "read", Arguments: map[string]any{"path": "/x"}}}
				d := p.Evaluate(NewMemoryRuntime(), occ)
				if d.Decision == "" {
					t.Fatalf("evaluate %s: no decision", anchor)
				}
				// Selection through the plans decides what merging the buckets, and
				// testing each clause the list index decides, decide.
				got, _ := json.Marshal(d)
				want, _ := json.Marshal(merged.Evaluate(NewMemoryRuntime(), occ))
				if !bytes.Equal(got, want) {
					t.Fatalf("evaluate %s %v: with plans %s, merging the buckets %s", anchor, facts, got, want)
				}
				if again, _ := json.Marshal(tested.Evaluate(NewMemoryRuntime(), occ)); !bytes.Equal(got, again) {
					t.Fatalf("evaluate %s %v: %s, without the list index %s", anchor, facts, got, again)
				}
				if again, _ := json.Marshal(alone.Evaluate(NewMemoryRuntime(), occ)); !bytes.Equal(got, again) {
					t.Fatalf("evaluate %s %v: %s, each rule evaluating its condition alone %s", anchor, facts, got, again)
				}
				// A member's position in the collection decides nothing ([OAR-DOC-31]).
				if again, _ := json.Marshal(inReverse.Evaluate(NewMemoryRuntime(), occ)); !bytes.Equal(got, again) {
					t.Fatalf("evaluate %s %v: %s, with the documents in reverse order %s", anchor, facts, got, again)
				}
			}
		}
	})
}

// FuzzLoadCapability: no capability document may panic the loader, and every
// diagnostic names a clause (and no document index: there is one document).
func FuzzLoadCapability(f *testing.F) {
	f.Add([]byte(fuzzCapability))
	f.Add([]byte(`{"oar_capability_version":"1.0","host":"h","anchors":{"core":{},"unsupported":[]}}`))
	f.Add([]byte("oar_capability_version: 1.0\nhost: h\n"))
	f.Add([]byte(`{"oar_capability_version":"1.0","host":"h","anchors":{"core":{"tool.pre_invoke":"model.input"}},"host_facts":[{"name":"h.x","type":"(int) -> map"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeDocuments(data)
		if err != nil || len(docs) != 1 {
			return
		}
		c, errs := LoadCapability(docs[0])
		for _, e := range errs {
			checkDiagnostic(t, e, 0)
		}
		if c == nil && len(errs) == 0 {
			t.Fatal("no capability and no diagnostic")
		}
	})
}

// FuzzDecodeDocuments: decoding never panics, a refusal ends in the clause the file
// breaks and names lines of the file (two lines before the stream move each line it
// names by two), what it returns is plain JSON data that encodes again, and a file
// yields the members kubectl's decoder reads from it, as many and each equal to
// kubectl's, exactly (kubectlDocuments), and, when it is a YAML stream, as many as the
// YAML parser reads from the whole stream: splitting it drops no document
// ([OAR-DOC-31]). A file kubectl's decoder refuses is refused; one refused for a line
// kubectl refuses as a separator, kubectl refuses, and its reader for that reason.
func FuzzDecodeDocuments(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte(`[{"a":1},{"b":[1,2,{"c":null}]}]`))
	f.Add([]byte("a: 1\n---\nb: 2\n...\n"))
	f.Add([]byte("a: 1\na: 2\n"))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte("--- {a: 1}\n--- [x, y]\n---\n- {c: 3}\n"))
	f.Add([]byte("a: 1\r\n---\r\n# c\rb: \"\u2028\"\n---\nc: 3\n  d: 4\n"))
	f.Add([]byte("a: 1\n---\nb: 1\nb: 2\n---\nc: d: e\n"))
	f.Add([]byte("a: |\n  x"))
	f.Add([]byte("[0.0, 1e3, -0, 12345678901234567890123, \"a  \u2028  b\", \"\u0085\"]"))
	f.Add([]byte("1: a\n\"1\": b\ntrue: c\n1.0: d\n"))
	f.Add([]byte("a: &x {1: a}\nb:\n  <<: *x\n  c: [yes, 0o17, 017, .inf, !!binary aGk=, 2001-12-14]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeDocuments(data)
		if err != nil {
			if !citedAtEnd.MatchString(err.Error()) {
				t.Fatalf("refusal citing no clause at its end: %v", err)
			}
			if lines := fileLines(err.Error()); len(lines) > 0 {
				_, moved := DecodeDocuments(append([]byte("#\n---\n"), data...))
				if moved == nil {
					t.Fatal("refused, but read after a comment and a \"---\"")
				}
				if kubectlSeparatorRefusal.MatchString(err.Error()) {
					if _, kerr := kubectlMembers(data); kerr == nil {
						t.Fatalf("%v; kubectl's decoder reads the file", err)
					}
					if kerr := kubectlReads(data); kerr == nil || !strings.HasPrefix(kerr.Error(), "invalid Yaml document separator: ") {
						t.Fatalf("%v; kubectl's reader, reading the file to its end: %v", err, kerr)
					}
				}
				for i := range lines {
					lines[i] += 2
				}
				if !slices.Equal(fileLines(moved.Error()), lines) {
					t.Fatalf("%v; after a comment and a \"---\": %v", err, moved)
				}
			}
			return
		}
		for i, d := range docs {
			if _, err := json.Marshal(d); err != nil {
				t.Fatalf("member %d does not encode as JSON: %v", i, err)
			}
		}
		switch n, err := kubectlMembers(data); {
		case err != nil:
			t.Fatalf("%d members; kubectl's decoder refuses the file: %v", len(docs), err)
		case n != len(docs):
			t.Fatalf("%d members; kubectl's decoder reads %d from the file", len(docs), n)
		}
		kubectl, err := kubectlDocuments(data)
		if err != nil {
			t.Fatalf("kubectl's decoder refuses the file: %v", err)
		}
		for i := range docs {
			if got := asReplacement(docs[i]); !reflect.DeepEqual(got, kubectl[i]) {
				t.Fatalf("member %d is %#v; kubectl's decoder reads %#v", i, got, kubectl[i])
			}
		}
		if trimmed := bytes.TrimSpace(data); trimmed[0] == '{' || trimmed[0] == '[' {
			return
		}
		if n, ok := streamMembers(data); ok && n != len(docs) {
			t.Fatalf("%d members; the YAML parser reads %d from the stream", len(docs), n)
		}
	})
}

// kubectlMembers counts the members kubectl's decoder (apimachinery's
// YAMLOrJSONDecoder, which kubectl apply reads a file with) reads from data, counting
// them as DecodeDocuments does: a sequence's items, no empty document; it returns the
// decoder's error when it refuses the file.
func kubectlMembers(data []byte) (n int, err error) {
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	n, _ = countMembers(func(v any) error {
		err = dec.Decode(v)
		return err
	})
	if err == io.EOF {
		err = nil
	}
	return n, err
}

// kubectlDocuments returns the members kubectl's decoder reads from data, as
// DecodeDocuments returns them (a sequence's items, no empty document), or its error.
// Each document is taken as the JSON text the decoder gives kubectl (the file's own
// bytes for JSON, for YAML the JSON sigs.k8s.io/yaml converts it to) and decoded by
// encoding/json with UseNumber, so the comparison is exact: a number is its JSON
// spelling (1.0 is not 1, 1e3 not 1000), a string and a key their code points. The
// one normalization is that a lone surrogate escape is U+FFFD to encoding/json and
// that code point to the engine ([OAR-FACT-23]): compare the engine's members through
// asReplacement.
func kubectlDocuments(data []byte) ([]any, error) {
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []any
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(raw) == 0 {
			// An empty document, which the YAML conversion gives no JSON text: kubectl
			// skips it, as it skips null.
			continue
		}
		jd := json.NewDecoder(bytes.NewReader(raw))
		jd.UseNumber()
		var v any
		if err := jd.Decode(&v); err != nil {
			return nil, err
		}
		if items, isList := v.([]any); isList {
			out = append(out, items...)
		} else if v != nil {
			out = append(out, v)
		}
	}
}

// kubectlSeparatorRefusal matches DecodeDocuments refusing a line kubectl's reader
// refuses as a document separator.
var kubectlSeparatorRefusal = regexp.MustCompile(`^line [0-9]+ of the file, .*, begins with "---" and then more than white space or a comment, which kubectl refuses \("invalid Yaml document separator"\)`)

// kubectlReads reads data to its end through the reader kubectl's decoder splits a YAML
// stream with, whatever the documents hold, and returns its error.
func kubectlReads(data []byte) error {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		if _, err := r.Read(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}
