package sidecar

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/fixture"
	"github.com/oar-operator/oar-operator/internal/occurrence"
)

const corpusDir = "../../testdata/conformance"

// TestConformanceOverHTTP runs the conformance corpus through the API: every fixture
// that loads (no expected.error) becomes a bundle of its capability, rules and
// configurations, served by a sidecar of its own; every occurrence is posted with the
// fixture's session_id, and each decision is compared with fixture.Compare exactly as
// the in-process runner compares it (per-occurrence expectations, then the last
// decision with the run's counters, [OAR-CONF-31]). Fixtures whose occurrences are not
// valid requests here are skipped and counted: those supplying detector_facts, which
// the sidecar refuses from callers, and those whose capability names a detector only
// a corpus runner provides. An occurrence at an anchor the capability does not declare
// is answered like any other, with one warning naming the anchor.
func TestConformanceOverHTTP(t *testing.T) {
	files := corpusFiles(t)
	var ran, loadErrors, skipped int
	reasons := map[string]int{}
	for _, path := range files {
		stem := strings.TrimSuffix(filepath.Base(path), ".json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fixture.Parse(data, stem)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if f.Expected.Error != nil {
			loadErrors++
			continue
		}
		if reason := httpSkip(f); reason != "" {
			skipped++
			reasons[reason]++
			continue
		}
		t.Run(f.ID, func(t *testing.T) { runOverHTTP(t, f) })
		ran++
	}
	t.Logf("conformance over HTTP: %d fixtures ran, %d expect a load error (not served), %d skipped %v, of %d", ran, loadErrors, skipped, reasons, len(files))
	if ran < 400 {
		t.Errorf("only %d fixtures ran over HTTP", ran)
	}
}

func corpusFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && fixture.IsFixtureFile(path) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// httpSkip says why a fixture cannot run over the API, or "".
func httpSkip(f *fixture.Fixture) string {
	capDoc, _ := f.Capability.(map[string]any)
	dets, _ := capDoc["detectors"].([]any)
	for _, d := range dets {
		if s, _ := d.(string); engine.ReservedDetectors()[s] == nil {
			return "capability names a detector the sidecar does not provide"
		}
	}
	for _, o := range f.Occurrences {
		if o.DetectorFacts != nil {
			return "detector_facts"
		}
		if _, errs := occurrence.Decode(requestBody(f, o.Occurrence), occurrence.HostMembers); errs != nil {
			return "not a valid request: " + errs[0].Clause
		}
	}
	return ""
}

// fixtureBundle is a sealed bundle of the fixture's capability, rules and
// configurations.
func fixtureBundle(t *testing.T, f *fixture.Fixture) *bundle.Bundle {
	t.Helper()
	b := &bundle.Bundle{Capability: f.Capability.(map[string]any), Packs: []bundle.Pack{{Name: "fixture", Generation: 1, Rules: f.Rules}}, Configs: []bundle.Config{}}
	for i, c := range f.Configs {
		b.Configs = append(b.Configs, bundle.Config{Name: fmt.Sprintf("config-%d", i), Generation: 1, Order: int64(i), Document: c.(map[string]any)})
	}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	return b
}

// runOverHTTP serves the fixture's documents and replays its occurrences.
func runOverHTTP(t *testing.T, f *fixture.Fixture) {
	b := fixtureBundle(t, f)
	ts := serve(t, b, Options{})
	c, errs := engine.LoadCapability(f.Capability)
	if errs != nil {
		t.Fatal(errs)
	}
	run := map[string]engine.Counts{}
	var last *engine.Decision
	for i, o := range f.Occurrences {
		r := ts.do(t, http.MethodPost, "/v1/evaluate", string(requestBody(f, o.Occurrence)))
		if r.status != http.StatusOK {
			t.Fatalf("occurrence %d: status %d: %s", i, r.status, r.body)
		}
		a := Answer{Decision: &engine.Decision{}}
		r.decode(t, &a)
		// encoding/json reads a lone surrogate escape as U+FFFD; the content, which
		// fixtures compare by code point, is read again as the engine reads JSON.
		if v, err := engine.DecodeJSON(r.body); err == nil {
			if c, ok := v.(map[string]any)["content"].(string); ok {
				a.Content = &c
			}
		}
		if a.Bundle != b.Digest {
			t.Fatalf("occurrence %d answered by %s, served %s", i, a.Bundle, b.Digest)
		}
		// An undeclared anchor is answered with exactly one warning, naming it.
		if declared := c.DeclaresAnchor(o.Anchor); declared && len(a.Warnings) > 0 ||
			!declared && (len(a.Warnings) != 1 || a.Warnings[0].Value != o.Anchor) {
			t.Fatalf("occurrence %d at %q (declared: %t): warnings %+v", i, o.Anchor, declared, a.Warnings)
		}
		for _, c := range a.Counters {
			run[c.Key] = c.Counts
		}
		if o.Expected != nil {
			if diff := fixture.Compare(o.Expected, a.Decision, a.Counters); diff != "" {
				t.Fatalf("occurrence %d: %s", i, diff)
			}
		}
		last = a.Decision
	}
	counters := last.Counters
	if len(f.Occurrences) > 1 {
		counters = engine.CountersOf(run)
	}
	if diff := fixture.Compare(&f.Expected, last, counters); diff != "" {
		t.Fatal(diff)
	}
}

// requestBody is the JSON a host would post for a fixture occurrence.
func requestBody(f *fixture.Fixture, o engine.Occurrence) []byte {
	m := map[string]any{"anchor": o.Anchor, "session_id": f.SessionID}
	if o.Facts != nil {
		m["facts"] = o.Facts
	}
	if o.DetectorFacts != nil {
		m["detector_facts"] = o.DetectorFacts
	}
	if o.HasRecentActivity {
		m["recent_activity"] = o.RecentActivity
	}
	if o.HasContent {
		m["content"] = o.Content
	}
	if o.ToolCall != nil {
		m["tool_call"] = map[string]any{"name": o.ToolCall.Name, "arguments": o.ToolCall.Arguments}
	}
	return appendJSON(nil, m)
}

// appendJSON writes a decoded JSON value as a host would post it: a lone surrogate
// code point as its \udXXX escape (codepoint.AppendJSON), which json.Marshal would make U+FFFD.
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return codepoint.AppendJSON(b, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(codepoint.AppendJSON(b, k), ':')
			b = appendJSON(b, x[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case []string:
		return appendList(b, x, codepoint.AppendJSON)
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append(b, data...)
}
