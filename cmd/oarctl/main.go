// Command oarctl is the offline companion of the oar-operator: it loads Open Agent Rules
// (OAR 1.0) documents with the same engine loader the admission webhook, the controller
// and the sidecar use, so a GitOps pipeline gets the cluster's verdict without a cluster.
//
//	oarctl validate  check rule, capability and configuration documents (sections 3, 8.2, 9),
//	                 and give RulePack, Capability and OperatorConfig manifests the
//	                 admission webhook's verdict, skipping manifests of other API groups
//	oarctl test      run conformance fixtures in the shape of section 10.2
//	oarctl eval      resolve one occurrence to its decision (sections 4, 6, 7)
//	oarctl replay    re-evaluate a decision log (oar-engine --decision-log) under the rules
//	                 before and after a change, and report the decisions that change
//	oarctl bench     measure evaluation latency and allocations over recorded occurrences
//	oarctl pack      wrap a publisher's directory of rule files into a RulePack manifest
//	oarctl inject    add the oar-engine sidecar to the pod templates that opt in, as the
//	                 mutating webhook does (for GitOps pipelines that render manifests)
//
// Every diagnostic is printed from the engine's one error type, so a line names the file,
// the document, the field, the clause and the rule.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one oarctl subcommand.
type command struct {
	name     string
	synopsis string
	summary  string
	run      func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order usage prints them. It is filled in by init
// because runHelp refers to it.
var commands []command

func init() {
	commands = []command{
		{"validate", validateSynopsis, "check rule, capability and configuration documents; give manifests the webhook's verdict, skipping other API groups", runValidate},
		{"test", testSynopsis, "run the conformance fixtures under each DIR", runTest},
		{"eval", evalSynopsis, "print the decision one occurrence resolves to", runEval},
		{"replay", replaySynopsis, "re-evaluate a decision log under the rules before and after a change; report what changed", runReplay},
		{"bench", benchSynopsis, "measure evaluation latency over a JSON Lines file of occurrences", runBench},
		{"pack", packSynopsis, "wrap a directory of rule files into a RulePack manifest", runPack},
		{"inject", injectSynopsis, "add the oar-engine sidecar to the pod templates that opt in, as the webhook does", runInject},
		{"help", "oarctl help [COMMAND]", "print this help, or a command's flags", runHelp},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes shared by every command.
const (
	exitOK    = 0
	exitFail  = 1 // the inputs were read and found wanting, or could not be read
	exitUsage = 2 // the command line itself is wrong
)

// run dispatches to the subcommand named by args[0].
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		usage(stdout)
		return exitOK
	}
	if c, ok := lookup(name); ok {
		return c.run(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "oarctl: unknown command %q\n\n", name)
	usage(stderr)
	return exitUsage
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "oarctl loads and runs Open Agent Rules (OAR 1.0) documents offline.")
	fmt.Fprintln(w, "\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n", c.synopsis)
	}
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'oarctl help COMMAND' or 'oarctl COMMAND -h' for a command's flags.")
}

// runHelp prints the overview, or the flags of the command named.
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0 || len(args) == 1 && args[0] == "help":
		usage(stdout)
		return exitOK
	case len(args) == 1:
		if c, ok := lookup(args[0]); ok {
			return c.run([]string{"-h"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "oarctl help: unknown command %q\n\n", args[0])
	}
	usage(stderr)
	return exitUsage
}

// newFlags returns a flag set for a subcommand whose errors go to stderr and whose
// usage parseFlags prints itself.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("oarctl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args, allowing flags after positional arguments (so "oarctl validate
// rules/ --capability cap.yaml" works) until a "--" ends the flags. It returns the
// positional arguments and, when parsing ended the command, the exit code: -h prints the
// command's usage on stdout and exits 0, a bad flag prints it on stderr and exits 2.
func parseFlags(fs *flag.FlagSet, synopsis string, args []string, stdout, stderr io.Writer) ([]string, int, bool) {
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(fs, synopsis, stdout)
			return nil, exitOK, false
		}
		if err != nil {
			commandUsage(fs, synopsis, stderr)
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), 0, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// abouts says more of a command, by flag set name, in its usage.
var abouts = map[string]string{"oarctl validate": validateAbout}

func commandUsage(fs *flag.FlagSet, synopsis string, w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", synopsis)
	if about := abouts[fs.Name()]; about != "" {
		fmt.Fprintf(w, "\n%s\n", about)
	}
	fmt.Fprint(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// usageError reports a command-line mistake the flag package cannot see.
func usageError(w io.Writer, synopsis, format string, args ...any) int {
	fmt.Fprintf(w, "oarctl: %s\nUsage: %s\n", fmt.Sprintf(format, args...), synopsis)
	return exitUsage
}

// fileList is a repeatable flag holding file names in the order given.
type fileList []string

func (l *fileList) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *fileList) Set(v string) error {
	if v == "" {
		return errors.New("a file name is required")
	}
	*l = append(*l, v)
	return nil
}
