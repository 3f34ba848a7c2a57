package expr

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// zeroEnv supplies the zero value of every declared type ([OAR-FACT-25]), which
// reaches the empty-list, empty-map and zero-divisor paths.
type zeroEnv struct{}

func (zeroEnv) Fact(id int) (types.Value, error) {
	for _, s := range testSymbols {
		if s.ID == id && !s.Func {
			return types.Zero(s.Type), nil
		}
	}
	return types.Value{}, errProvider
}

func (zeroEnv) Call(id int, _ types.Value, _ int) (types.Value, error) {
	for _, s := range testSymbols {
		if s.ID == id && s.Func {
			return types.Zero(s.Type), nil
		}
	}
	return types.Value{}, errProvider
}

func (zeroEnv) RuleCounter(int, int) (int64, error) { return 0, nil }

// FuzzCompile checks that no input panics the compiler, that every rejection is a
// well-formed diagnostic, that Check finds what Compile finds, and that a compiled program evaluates without panicking,
// failing only by a raise or its environment's own error.
func FuzzCompile(f *testing.F) {
	opts := Options{Symbols: testSymbols, MaxNodes: 512, ResolveRule: resolveRule}
	f.Fuzz(func(t *testing.T, src string) {
		p, errs := Compile(src, opts)
		refs, checked := Check(src, opts)
		if want, got := jsonText(t, errs), jsonText(t, checked); got != want {
			t.Fatalf("Check's diagnostics %s, Compile's %s", got, want)
		}
		if p != nil && !slices.Equal(refs, p.Refs()) {
			t.Fatalf("Check's references %v, Compile's %v", refs, p.Refs())
		}
		if p == nil {
			checkDiagnostics(t, src, errs)
			for _, e := range errs {
				if e.Offset < 0 || e.Offset > utf8.RuneCountInString(src) {
					t.Fatalf("offset %d outside the condition: %v", e.Offset, e)
				}
			}
			return
		}
		if len(errs) != 0 {
			t.Fatalf("a program and diagnostics: %v", errs)
		}
		if p.Nodes() < 1 || p.Nodes() > opts.MaxNodes {
			t.Fatalf("Nodes() = %d outside [1, %d]", p.Nodes(), opts.MaxNodes)
		}
		for _, env := range []Env{newEnv(), zeroEnv{}} {
			if _, err := p.Eval(env); err != nil {
				var r *RaiseError
				if !errors.As(err, &r) && err != errProvider {
					t.Fatalf("Eval: unexpected error %v", err)
				}
				if r != nil && (r.Offset < 0 || r.Offset > utf8.RuneCountInString(src)) {
					t.Fatalf("raise offset %d outside the condition: %v", r.Offset, r)
				}
			}
		}
	})
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
