package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTestReportsEveryFixture(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.json")
	stdout, stderr, code := oarctl(t, "test", "--json", report, "testdata/fixtures")
	if code != exitFail {
		t.Errorf("exit code %d, want %d: a failing fixture fails the run", code, exitFail)
	}
	if stderr != "" {
		t.Errorf("stderr %q", stderr)
	}
	want := []string{
		"FAIL warn-expected-but-blocks: decision: want warn, got block",
		"PASS block-read-outside-scope",
		"SKIP presidio-detector: the capability registers detector://presidio, a detector this runner cannot provide",
		"1 passed, 1 failed, 1 skipped",
	}
	if got := lines(stdout); !slices.Equal(got, want) {
		t.Errorf("stdout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var got testReport
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("--json report is not JSON: %v\n%s", err, data)
	}
	wantReport := []fixtureEntry{
		{ID: "warn-expected-but-blocks", Status: "FAIL", Reason: "decision: want warn, got block"},
		{ID: "block-read-outside-scope", Status: "PASS"},
		{ID: "presidio-detector", Status: "SKIP", Reason: "the capability registers detector://presidio, a detector this runner cannot provide"},
	}
	if !slices.Equal(got.Fixtures, wantReport) {
		t.Errorf("--json report %+v, want %+v", got.Fixtures, wantReport)
	}
	if !strings.Contains(string(data), `"fixtures": [`) || !strings.Contains(string(data), `"reason": ""`) {
		t.Errorf("--json report does not have the documented shape:\n%s", data)
	}
}

func TestTestSkipsDoNotFail(t *testing.T) {
	stdout, _, code := oarctl(t, "test", "testdata/fixtures/pass", "testdata/fixtures/skip")
	if code != exitOK {
		t.Errorf("exit code %d, want %d", code, exitOK)
	}
	if got := lines(stdout); len(got) != 3 || got[2] != "1 passed, 0 failed, 1 skipped" {
		t.Errorf("stdout:\n%s", stdout)
	}
}

func TestTestVerboseNamesTheFile(t *testing.T) {
	stdout, _, _ := oarctl(t, "test", "-v", "testdata/fixtures/pass")
	want := "PASS block-read-outside-scope (" + filepath.Join("testdata", "fixtures", "pass", "block-read-outside-scope.json") + ")"
	if got := lines(stdout); len(got) != 2 || got[0] != want {
		t.Errorf("stdout:\n%s\nwant first line %q", stdout, want)
	}
}

func TestTestWithoutFixturesFails(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		dir, stderr string
	}{
		{empty, "oarctl test: " + empty + ": no fixture (*.json file) under this directory\n"},
		{"testdata/missing", "oarctl test: lstat testdata/missing: no such file or directory\n"},
	}
	for _, tt := range tests {
		stdout, stderr, code := oarctl(t, "test", tt.dir)
		if code != exitFail || stderr != tt.stderr || stdout != "0 passed, 0 failed, 0 skipped\n" {
			t.Errorf("test %s: exit code %d, stdout %q, stderr %q", tt.dir, code, stdout, stderr)
		}
	}
}
