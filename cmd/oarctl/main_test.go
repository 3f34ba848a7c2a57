package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a substring stdout must contain, or "" for empty stdout
		stderr string // a substring stderr must contain, or "" for empty stderr
	}{
		{"no command", nil, exitUsage, "", "Usage:"},
		{"help", []string{"help"}, exitOK, "oarctl validate [--strict] [--capability FILE]", ""},
		{"-h", []string{"-h"}, exitOK, "Commands:", ""},
		{"unknown command", []string{"lint"}, exitUsage, "", `unknown command "lint"`},
		{"help for a command", []string{"help", "bench"}, exitOK, "-occurrences FILE", ""},
		{"help for an unknown command", []string{"help", "lint"}, exitUsage, "", `unknown command "lint"`},
		{"command -h", []string{"validate", "-h"}, exitOK, "Usage: oarctl validate", ""},
		{"bad flag", []string{"test", "--jsn", "x"}, exitUsage, "", "flag provided but not defined: -jsn"},
		{"validate without PATH", []string{"validate"}, exitUsage, "", "validate needs at least one PATH"},
		{"test without DIR", []string{"test"}, exitUsage, "", "test needs at least one DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := oarctl(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			for _, c := range []struct{ name, got, want string }{{"stdout", stdout, tt.stdout}, {"stderr", stderr, tt.stderr}} {
				if c.want == "" && c.got != "" {
					t.Errorf("%s should be empty, got:\n%s", c.name, c.got)
				}
				if !strings.Contains(c.got, c.want) {
					t.Errorf("%s does not contain %q:\n%s", c.name, c.want, c.got)
				}
			}
		})
	}
}

func TestParseFlagsAllowsFlagsAfterArguments(t *testing.T) {
	tests := []struct {
		args       []string
		positional []string
		config     []string
	}{
		{[]string{"a", "--config", "c1", "b"}, []string{"a", "b"}, []string{"c1"}},
		{[]string{"--config", "c1", "a", "-config=c2"}, []string{"a"}, []string{"c1", "c2"}},
		{[]string{"a", "--", "--config", "b"}, []string{"a", "--config", "b"}, nil},
		{[]string{"-", "x"}, []string{"-", "x"}, nil},
	}
	for _, tt := range tests {
		fs := newFlags("t", io.Discard)
		var config fileList
		fs.Var(&config, "config", "")
		got, _, ok := parseFlags(fs, "t", tt.args, io.Discard, io.Discard)
		if !ok || !slices.Equal(got, tt.positional) || !slices.Equal(config, tt.config) {
			t.Errorf("parseFlags(%q) = %q, config %q, ok %v; want %q, config %q", tt.args, got, config, ok, tt.positional, tt.config)
		}
	}
}

func TestFileListRefusesAnEmptyName(t *testing.T) {
	var l fileList
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&l, "config", "")
	if err := fs.Parse([]string{"--config="}); err == nil {
		t.Fatal("an empty --config was accepted")
	}
}
