package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// withStdin makes file the standard input eval reads for the rest of the test.
func withStdin(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	withStdinText(t, string(data))
}

func withStdinText(t *testing.T, text string) {
	t.Helper()
	saved := stdin
	stdin = strings.NewReader(text)
	t.Cleanup(func() { stdin = saved })
}

// oarctl runs the CLI in-process and returns what it printed and its exit code.
func oarctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errs bytes.Buffer
	code = run(args, &out, &errs)
	return out.String(), errs.String(), code
}

// lines splits output into its lines, dropping the final newline.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// containsInOrder checks that each wanted line is a prefix of some line of got, in order.
func containsInOrder(t *testing.T, got, want []string) {
	t.Helper()
	i := 0
	for _, w := range want {
		for i < len(got) && !strings.HasPrefix(got[i], w) {
			i++
		}
		if i == len(got) {
			t.Errorf("missing line %q in:\n%s", w, strings.Join(got, "\n"))
			return
		}
		i++
	}
}
