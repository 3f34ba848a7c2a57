package importlines

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/oar-operator/oar-operator"

// A line is one rule of the layout: no package under From may depend, directly or
// through others, on a package Crossing reports. Test files are not held to it: an
// integration test may run a reconciler beside the webhooks it tests.
type line struct {
	name     string
	from     []string // package patterns: an import path, or a prefix ending in "/..."
	crossing func(dep string) bool
}

var lines = []line{
	{
		name: "the engine imports nothing of the project and no Kubernetes package (sigs.k8s.io/yaml aside)",
		from: []string{module + "/internal/engine/..."},
		crossing: func(dep string) bool {
			if within(dep, module+"/...") {
				return !within(dep, module+"/internal/engine/...")
			}
			return kubernetes(dep) && !within(dep, "sigs.k8s.io/yaml/...")
		},
	},
	{
		name: "the sidecar links no Kubernetes API, client-go or controller-runtime package",
		from: []string{module + "/cmd/oar-engine", module + "/internal/sidecar/..."},
		crossing: func(dep string) bool {
			return strings.HasPrefix(dep, "k8s.io/api") || within(dep, "k8s.io/client-go/...") ||
				within(dep, "sigs.k8s.io/controller-runtime/...")
		},
	},
	{
		name:     "the reconcilers never import the admission webhooks",
		from:     []string{module + "/controllers/..."},
		crossing: func(dep string) bool { return within(dep, module+"/internal/admission/...") },
	},
	{
		name:     "the admission webhooks never import the reconcilers",
		from:     []string{module + "/internal/admission/..."},
		crossing: func(dep string) bool { return within(dep, module+"/controllers/...") },
	},
	{
		name:     "the API types do not import the engine",
		from:     []string{module + "/api/..."},
		crossing: func(dep string) bool { return within(dep, module+"/internal/engine/...") },
	},
}

// within reports whether path matches pattern, an import path or a prefix ending in "/...".
func within(path, pattern string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}

func kubernetes(path string) bool {
	return strings.HasPrefix(path, "k8s.io/") || strings.HasPrefix(path, "sigs.k8s.io/")
}

// violations lists, for every line, each package under it and the first dependency that
// crosses it, sorted.
func violations(deps map[string][]string, lines []line) []string {
	var out []string
	for _, l := range lines {
		for pkg, ds := range deps {
			if !slices.ContainsFunc(l.from, func(p string) bool { return within(pkg, p) }) {
				continue
			}
			for _, d := range ds {
				if l.crossing(d) {
					out = append(out, fmt.Sprintf("%s: %s depends on %s", l.name, pkg, d))
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// moduleDeps returns every package of the module with its transitive non-test
// dependencies, as `go list -deps` computes them for a build.
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	// Named trees rather than ./..., which would also list what a test run leaves under tmp/.
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`,
		"./api/...", "./cmd/...", "./controllers/...", "./internal/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	deps := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read go list output: %v", err)
	}
	return deps
}

func TestImportLines(t *testing.T) {
	deps := moduleDeps(t)
	for _, l := range lines {
		held := 0
		for pkg := range deps {
			if slices.ContainsFunc(l.from, func(p string) bool { return within(pkg, p) }) {
				held++
			}
		}
		if held == 0 {
			t.Errorf("no package matches %q: the line guards nothing (was a directory moved?)", l.name)
		}
	}
	for _, v := range violations(deps, lines) {
		t.Error(v)
	}
}

// TestViolationsAreFound proves the checker on a made-up graph with one crossing per line,
// so TestImportLines passing means the lines hold, not that nothing was checked.
func TestViolationsAreFound(t *testing.T) {
	deps := map[string][]string{
		module + "/internal/engine/expr":       {"strings", module + "/internal/bundle"},
		module + "/internal/engine":            {"sigs.k8s.io/yaml", "go.yaml.in/yaml/v2", "k8s.io/apimachinery/pkg/util/json"},
		module + "/cmd/oar-engine":             {module + "/internal/sidecar", "k8s.io/api/core/v1"},
		module + "/internal/sidecar/reload":    {"sigs.k8s.io/controller-runtime/pkg/client"},
		module + "/internal/sidecar/metrics":   {"k8s.io/client-go/rest"},
		module + "/controllers":                {module + "/internal/resource", module + "/internal/admission"},
		module + "/internal/admission":         {module + "/internal/resource", module + "/controllers"},
		module + "/api/v1alpha1":               {module + "/internal/engine"},
		module + "/internal/sidecar":           {module + "/internal/engine", "sigs.k8s.io/yaml"},
		module + "/internal/engine/strictjson": {"encoding/json"},
	}
	got := violations(deps, lines)
	want := []string{
		lines[0].name + ": " + module + "/internal/engine depends on k8s.io/apimachinery/pkg/util/json",
		lines[0].name + ": " + module + "/internal/engine/expr depends on " + module + "/internal/bundle",
		lines[1].name + ": " + module + "/cmd/oar-engine depends on k8s.io/api/core/v1",
		lines[1].name + ": " + module + "/internal/sidecar/metrics depends on k8s.io/client-go/rest",
		lines[1].name + ": " + module + "/internal/sidecar/reload depends on sigs.k8s.io/controller-runtime/pkg/client",
		lines[2].name + ": " + module + "/controllers depends on " + module + "/internal/admission",
		lines[3].name + ": " + module + "/internal/admission depends on " + module + "/controllers",
		lines[4].name + ": " + module + "/api/v1alpha1 depends on " + module + "/internal/engine",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
