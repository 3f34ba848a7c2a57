package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/sidecar"
)

const evalSynopsis = "oarctl eval --capability FILE --rules FILE [--rules FILE]... [--config FILE]... [--occurrence FILE | -]"

// stdin is where eval reads an occurrence when none is named or the name is "-".
var stdin io.Reader = os.Stdin

// runEval loads a capability, rules and configurations, resolves one occurrence against
// a fresh runtime, and prints the decision as indented JSON in the shapes of section 10.2.
func runEval(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("eval", stderr)
	var pf programFlags
	pf.register(flags)
	occFile := flags.String("occurrence", "", "the occurrence `FILE` to evaluate, one JSON object (default, or -: standard input)")
	rest, code, ok := parseFlags(flags, evalSynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(rest) == 1 && rest[0] == "-" && *occFile == "":
		*occFile = "-"
	case len(rest) > 0:
		return usageError(stderr, evalSynopsis, "unexpected argument %q", rest[0])
	}
	if msg := pf.missing(); msg != "" {
		return usageError(stderr, evalSynopsis, "%s", msg)
	}

	l := &loader{w: stderr}
	p := pf.load(l)
	if p == nil {
		return exitFail
	}
	occ, src := readOccurrence(l, *occFile)
	if occ == nil {
		return exitFail
	}
	if !p.Capability().DeclaresAnchor(occ.Anchor) {
		l.warn(origin{file: src}, undeclaredAnchor(occ.Anchor, p.Capability()))
	}
	d := p.Evaluate(engine.NewMemoryRuntime(), occ)
	// The sidecar's encoding, not encoding/json's, which would write a lone surrogate
	// code point as U+FFFD ([OAR-FACT-26]).
	var out bytes.Buffer
	if err := json.Indent(&out, sidecar.AppendDecision(nil, d), "", "  "); err != nil {
		fmt.Fprintf(stderr, "oarctl eval: %v\n", err)
		return exitFail
	}
	out.WriteByte('\n')
	if _, err := out.WriteTo(stdout); err != nil {
		fmt.Fprintf(stderr, "oarctl eval: %v\n", err)
		return exitFail
	}
	return exitOK
}

// readOccurrence reads the occurrence from file, or from standard input when file is
// empty or "-", reporting a malformed one by member. It returns the name it read from.
func readOccurrence(l *loader, file string) (*engine.Occurrence, string) {
	src := file
	var data []byte
	var err error
	if file == "" || file == "-" {
		src = "stdin"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		l.errorf(src, "%v", unwrapPathError(err))
		return nil, src
	}
	occ, errs := decodeOccurrence(data)
	for _, e := range errs {
		l.report(origin{file: src}, e)
	}
	return occ, src
}

// undeclaredAnchor warns of an occurrence at an anchor the capability c does not
// declare: it selects nothing ([OAR-SEL-7]), which is right, but usually means a
// misspelling, so it suggests the close declared anchor.
func undeclaredAnchor(anchor string, c *engine.Capability) *diag.Error {
	return diag.New("OAR-SEL-7", "anchor", "anchor %q is not declared by the capability (neither the local anchor of a supported core anchor nor a host-native anchor); no rule selects it", anchor).
		Suggest(anchor, c.DeclaredAnchors())
}
