package expr

import "testing"

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if p, errs := Compile(typical, testOptions); p == nil || p.Nodes() != 20 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkEval(b *testing.B) {
	p, errs := Compile(typical, testOptions)
	if p == nil || p.Nodes() != 20 {
		b.Fatal(errs)
	}
	env := Env(newEnv())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Eval(env); err != nil {
			b.Fatal(err)
		}
	}
}
