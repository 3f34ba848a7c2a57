package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/fixture"
)

const testSynopsis = "oarctl test [--json FILE] [-v] DIR..."

// testReport is the --json report: every fixture's result, in the order run.
type testReport struct {
	Fixtures []fixtureEntry `json:"fixtures"`
}

type fixtureEntry struct {
	ID     string         `json:"id"`
	Status fixture.Status `json:"status"`
	Reason string         `json:"reason"`
}

// runTest runs the conformance fixtures (section 10.2) under each DIR with the engine's
// own loader and evaluator ([OAR-CONF-38]) and prints one line per fixture, then
// "N passed, N failed, N skipped". A skipped fixture is reported with its reason and is
// not a pass ([OAR-CONF-24]); it does not fail the run either.
func runTest(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("test", stderr)
	jsonFile := flags.String("json", "", "also write every fixture's result to `FILE` as JSON")
	verbose := flags.Bool("v", false, "end each line with the fixture's file")
	dirs, code, ok := parseFlags(flags, testSynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(dirs) == 0 {
		return usageError(stderr, testSynopsis, "test needs at least one DIR of fixtures")
	}

	broken := false
	var results []fixture.Result
	for _, dir := range dirs {
		rs, err := fixture.RunDir(dir)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "oarctl test: %v\n", err)
			broken = true
		case len(rs) == 0:
			fmt.Fprintf(stderr, "oarctl test: %s: no fixture (*.json file) under this directory\n", dir)
			broken = true
		}
		results = append(results, rs...)
	}

	var passed, failed, skipped int
	report := testReport{Fixtures: make([]fixtureEntry, 0, len(results))}
	for _, r := range results {
		reason := strings.ReplaceAll(r.Reason, "\n", "; ")
		line := string(r.Status) + " " + r.ID
		switch r.Status {
		case fixture.Pass:
			passed++
		case fixture.Fail:
			failed++
			line += ": " + reason
		case fixture.Skip:
			skipped++
			line += ": " + reason
		}
		if *verbose {
			line += " (" + r.File + ")"
		}
		fmt.Fprintln(stdout, line)
		report.Fixtures = append(report.Fixtures, fixtureEntry{ID: r.ID, Status: r.Status, Reason: reason})
	}
	fmt.Fprintf(stdout, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)

	if *jsonFile != "" {
		if err := writeJSON(*jsonFile, report); err != nil {
			fmt.Fprintf(stderr, "oarctl test: %v\n", err)
			broken = true
		}
	}
	if broken || failed > 0 {
		return exitFail
	}
	return exitOK
}

func writeJSON(file string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}
