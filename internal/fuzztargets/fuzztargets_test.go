package fuzztargets

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the module's root directory, from this package's.
const root = "../.."

// TestMakefileListsEveryFuzzTarget: a fuzz target the Makefile does not list is never
// fuzzed, only its seeds run; one it lists that no test defines fails every run.
func TestMakefileListsEveryFuzzTarget(t *testing.T) {
	listed := makefileTargets(t)
	defined := definedTargets(t)
	for _, d := range defined {
		if !slices.Contains(listed, d) {
			t.Errorf("%s is not in the Makefile's FUZZ_TARGETS: add it, so make fuzz-smoke and make fuzz run it", d)
		}
	}
	for _, l := range listed {
		if !slices.Contains(defined, l) {
			t.Errorf("the Makefile's FUZZ_TARGETS lists %s, which no test of the module defines", l)
		}
	}
}

// makefileTargets reads the package:target pairs of FUZZ_TARGETS.
func makefileTargets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []string
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "FUZZ_TARGETS :="):
			in = true
		case in:
			if entry := strings.TrimSpace(strings.TrimSuffix(line, `\`)); entry != "" {
				out = append(out, entry)
			}
			in = strings.HasSuffix(line, `\`)
		}
	}
	if len(out) == 0 {
		t.Fatal("the Makefile defines no FUZZ_TARGETS")
	}
	return out
}

// definedTargets lists the fuzz targets of the module's test files as ./dir:FuzzX,
// leaving out the tool modules under hack/ and testdata.
func definedTargets(t *testing.T) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || hasGoMod(path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				out = append(out, "./"+filepath.ToSlash(dir)+":"+fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hasGoMod(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}
