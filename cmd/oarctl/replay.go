package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/replay"
	"github.com/oar-operator/oar-operator/internal/sidecar/standalone"
)

const replaySynopsis = "oarctl replay (--capability FILE --rules FILE... [--config FILE]... | --bundle PATH) (--against FILE... [--against-config FILE]... | --against-bundle PATH) --log FILE... [--max-changes N] [--json] [--fail-on-change] [--fail-on-mismatch]"

// replaySide names the files one side of a replay loads: rules against the shared
// --capability, or a bundle.
type replaySide struct {
	rules, configs fileList
	bundle         string
}

func (s *replaySide) given() bool { return len(s.rules) > 0 || len(s.configs) > 0 || s.bundle != "" }

// runReplay evaluates every occurrence of a decision log again under the rules before
// and after a change, and reports what changed and whether the before side reproduced
// what was logged.
func runReplay(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("replay", stderr)
	var before, after replaySide
	var capability string
	var logs fileList
	flags.StringVar(&capability, "capability", "", "the capability document `FILE` that --rules and --against load against")
	flags.Var(&before.rules, "rules", "a `FILE` of the rules before the change (repeatable; all files load as one rule set)")
	flags.Var(&before.configs, "config", "a configuration document `FILE` applied to the rules before the change (repeatable; in order)")
	flags.StringVar(&before.bundle, "bundle", "", "the bundle before the change, instead of --rules: a bundle `PATH` (the ConfigMap manifest <capability>-oar-bundle as kubectl prints it, its bundle.json, or a mounted bundle directory)")
	flags.Var(&after.rules, "against", "a `FILE` of the rules after the change (repeatable)")
	flags.Var(&after.configs, "against-config", "a configuration document `FILE` applied to the rules after the change (repeatable; in order)")
	flags.StringVar(&after.bundle, "against-bundle", "", "the bundle after the change, instead of --against (a bundle `PATH`, as for --bundle)")
	flags.Var(&logs, "log", "a decision log `FILE` (oar-engine --decision-log); repeatable, the logs of several replicas replay together, each session in the order it took effect (by its lines' session_state, else by time)")
	maxChanges := flags.Int("max-changes", replay.DefaultMaxListed, "list at most `N` changed occurrences (and N mismatches, and N lines per reason an occurrence cannot be reproduced); the rest are counted")
	asJSON := flags.Bool("json", false, "print the report as one JSON object")
	failOnChange := flags.Bool("fail-on-change", false, "exit 1 when any decision changed, in any part: effect, deciding rule, trace, on_fire, transforms, content, advisories, copy; an unconfirmed change too")
	failOnMismatch := flags.Bool("fail-on-mismatch", false, "exit 1 when the before side did not reproduce a logged decision")
	rest, code, ok := parseFlags(flags, replaySynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	if msg := replayUsage(rest, capability, before, after, logs, *maxChanges); msg != "" {
		return usageError(stderr, replaySynopsis, "%s", msg)
	}

	l := &loader{w: stderr}
	entries := readLogs(l, logs)
	logged := map[string]bool{}
	for _, e := range entries {
		logged[e.Record.Bundle] = true
	}
	b := before.load(l, capability, logged)
	a := after.load(l, capability, logged)
	if b == nil || a == nil || l.failed {
		return exitFail
	}
	rep := replay.Run(entries, replay.Options{Before: *b, After: *a, MaxListed: *maxChanges})
	var err error
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeReport(stdout, rep, logs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "oarctl replay: %v\n", err)
		return exitFail
	}
	if failing(rep, *failOnChange, *failOnMismatch) {
		return exitFail
	}
	return exitOK
}

// failing reports whether a report fails the command: with onChange, any change, an
// unconfirmed one too (it may be the rule change's); with onMismatch, any logged
// decision the before side did not reproduce.
func failing(rep *replay.Report, onChange, onMismatch bool) bool {
	return onChange && rep.Changed > 0 || onMismatch && rep.Mismatched > 0
}

// replayUsage names what is wrong with the command line, or returns "".
func replayUsage(rest []string, capability string, before, after replaySide, logs fileList, maxChanges int) string {
	switch {
	case len(rest) > 0:
		return fmt.Sprintf("unexpected argument %q", rest[0])
	case !before.given():
		return "the rules before the change are required: --rules FILE or --bundle PATH"
	case !after.given():
		return "the rules after the change are required: --against FILE or --against-bundle PATH"
	case before.bundle != "" && (len(before.rules) > 0 || len(before.configs) > 0):
		return "--bundle and --rules/--config are exclusive"
	case after.bundle != "" && (len(after.rules) > 0 || len(after.configs) > 0):
		return "--against-bundle and --against/--against-config are exclusive"
	case before.bundle == "" && len(before.rules) == 0:
		return "--config needs --rules"
	case after.bundle == "" && len(after.rules) == 0:
		return "--against-config needs --against"
	case capability == "" && (len(before.rules) > 0 || len(after.rules) > 0):
		return "--capability FILE is required with --rules or --against"
	case len(logs) == 0:
		return "--log FILE is required"
	case maxChanges < 1:
		return fmt.Sprintf("--max-changes must be at least 1; got %d", maxChanges)
	}
	return ""
}

// load loads one side, reporting every problem; nil when it does not load. Rules
// from files carry a digest only when it is one the log was written by: the digest an
// oar-engine serving these files answers with names each pack by its path as given,
// so a digest that differs proves nothing.
func (s *replaySide) load(l *loader, capability string, logged map[string]bool) *replay.Side {
	if s.bundle != "" {
		return loadBundle(l, s.bundle)
	}
	pf := programFlags{capability: capability, rules: s.rules, configs: s.configs}
	p := pf.load(l)
	if p == nil {
		return nil
	}
	var digest string
	if b, err := (standalone.Files{Capability: capability, Rules: s.rules, Configs: s.configs}).Read(); err == nil && logged[b.Digest] {
		digest = b.Digest
	}
	return &replay.Side{Program: p, Digest: digest}
}

// loadBundle reads a bundle from a mounted bundle directory, a ConfigMap manifest
// (YAML or JSON) or a bundle document, verifies its digest and loads it.
func loadBundle(l *loader, path string) *replay.Side {
	b, err := readBundle(path)
	if err != nil {
		l.errorf(path, "%v", unwrapPathError(err))
		return nil
	}
	loaded, err := bundle.Load(b)
	if err != nil {
		l.errorf(path, "%v", err)
		return nil
	}
	return &replay.Side{Program: loaded.Program, Digest: b.Digest}
}

func readBundle(path string) (*bundle.Bundle, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return bundle.ReadDir(path)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := engine.DecodeDocuments(text)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("holds %d documents; a bundle file holds one ConfigMap manifest or one bundle document", len(docs))
	}
	obj, _ := docs[0].(map[string]any)
	if obj["kind"] != "ConfigMap" {
		return bundle.Decode(map[string]string{bundle.KeyPlain: string(text)}, nil)
	}
	data := map[string]string{}
	if d, ok := obj["data"].(map[string]any); ok {
		for k, v := range d {
			if s, isStr := v.(string); isStr {
				data[k] = s
			}
		}
	}
	binary := map[string][]byte{}
	if d, ok := obj["binaryData"].(map[string]any); ok {
		for k, v := range d {
			s, _ := v.(string)
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("binaryData.%s: %w", k, err)
			}
			binary[k] = raw
		}
	}
	return bundle.Decode(data, binary)
}

// readLogs reads every decision log, reporting each line that does not read as
// FILE:LINE.
func readLogs(l *loader, files []string) []decisionlog.Entry {
	var out []decisionlog.Entry
	type seenFile struct {
		name string
		info os.FileInfo
	}
	var seen []seenFile
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			l.errorf(file, "%v", unwrapPathError(err))
			continue
		}
		// A log given twice would replay each of its occurrences twice, and its
		// sessions' second pass would decide otherwise than the first.
		if info, err := f.Stat(); err == nil {
			if i := slices.IndexFunc(seen, func(s seenFile) bool { return os.SameFile(s.info, info) }); i >= 0 {
				l.errorf(file, "the same file as %s, given twice: give each log once", seen[i].name)
				_ = f.Close()
				continue
			}
			seen = append(seen, seenFile{file, info})
		}
		log, err := decisionlog.Read(f)
		_ = f.Close()
		for _, e := range decisionlog.Errors(err) {
			var le *decisionlog.LineError
			if errors.As(e, &le) {
				l.errorf(fmt.Sprintf("%s:%d", file, le.Line), "%v", le.Err)
			} else {
				l.errorf(file, "%v", e)
			}
		}
		if len(log.Entries) == 0 && err == nil {
			l.errorf(file, "no decision line: the file holds no line of kind %q (oar-engine --decision-log writes them)", decisionlog.Kind)
		}
		for i := range log.Entries {
			log.Entries[i].Source = file
		}
		out = append(out, log.Entries...)
	}
	return out
}

// writeReport prints the report as tables.
func writeReport(w io.Writer, r *replay.Report, logs []string) error {
	at := func(log string, line int) string {
		if len(logs) > 1 {
			return fmt.Sprintf("%s:%d", log, line)
		}
		return fmt.Sprint(line)
	}
	// The aligned tables reach w through one buffer: tabwriter writes a padded cell in
	// small pieces.
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("replayed %d occurrences in %d sessions from %s\n", r.Occurrences, r.Sessions, strings.Join(logs, ", "))
	for _, b := range r.Bundles {
		p("  %d logged by bundle %s\n", b.Count, b.Name)
	}
	p("  before: %s\n  after:  %s\n", orUnknown(r.BeforeBundle), orUnknown(r.AfterBundle))
	p("\ndecision\tbefore\tafter\n")
	for i, b := range r.Before {
		p("%s\t%d\t%d\n", b.Name, b.Count, r.After[i].Count)
	}
	p("changed\t\t%d\n", r.Changed)
	if r.Unconfirmed > 0 {
		p("  confirmed\t\t%d\n  unconfirmed\t\t%d\n", r.Confirmed, r.Unconfirmed)
	}
	// A change may have no responsible rule (responsible), so each table is printed
	// when it has a row.
	if len(r.ByRule) > 0 {
		p("\n")
		countTable(p, "changed by rule", r.ByRule, r.UnconfirmedByRule, r.Unconfirmed > 0)
	}
	if len(r.ByTool) > 0 {
		p("\n")
		countTable(p, "changed by tool", r.ByTool, r.UnconfirmedByTool, r.Unconfirmed > 0)
	}
	if len(r.Changes) > 0 {
		of := fmt.Sprint(r.Changed)
		if r.Unconfirmed > 0 {
			of += fmt.Sprintf(", %d unconfirmed", r.Unconfirmed)
		}
		p("\nchanges (%d of %s):\nline\tsession\tanchor\ttool\tbefore → after\trules\tdiffers in\n", len(r.Changes), of)
		for _, c := range r.Changes {
			note := ""
			if c.WithoutContent {
				note = " (content not logged)"
			}
			if c.UncertainSince != nil {
				note += " (unconfirmed: the session's state is unknown since " + c.UncertainSince.String() + ")"
			}
			p("%s\t%s\t%s\t%s\t%s → %s%s\t%s\t%s\n", at(c.Log, c.Line), c.Session, c.Anchor, cell(orDash(c.Tool)), outcome(c.Before), outcome(c.After), note,
				strings.Join(c.Rules, ", "), strings.Join(c.Differs, ", "))
		}
		if r.ChangesNotListed > 0 {
			p("... and %d more (--max-changes)\n", r.ChangesNotListed)
		}
	}
	p("\nthe before side against the log: %d of %d decisions reproduced, %d not\n", r.Reproduced, r.Occurrences, r.Mismatched)
	if len(r.Mismatches) > 0 {
		p("line\tsession\tanchor\ttool\tlogged → replayed\twhy\n")
		for _, m := range r.Mismatches {
			p("%s\t%s\t%s\t%s\t%s → %s\t%s\n", at(m.Log, m.Line), m.Session, m.Anchor, cell(orDash(m.Tool)), outcome(m.Logged), outcome(m.Before), m.Reason)
		}
		if r.MismatchesNotListed > 0 {
			p("... and %d more\n", r.MismatchesNotListed)
		}
	}
	for _, u := range r.Unreproducible {
		places := make([]string, len(u.Lines))
		for i, pl := range u.Lines {
			places[i] = at(pl.Log, pl.Line)
		}
		p("cannot reproduce %d occurrences exactly: %s; lines %s", u.Count, u.Reason, strings.Join(places, ", "))
		if u.Count > len(u.Lines) {
			p(", ...")
		}
		p("\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// cell is a tool name as a table shows it, cut to diag.MaxValueLen code points: a
// tool name is the model's to choose, and tabwriter pads every row of a column to its
// widest cell (one name of 100,000 characters made a report of 400 MB). The JSON report
// has the names whole.
func cell(name string) string { return diag.Truncate(name) }

// countTable prints changes counted by name and, with unconfirmed, how many of them
// the log confirms and how many it cannot.
func countTable(p func(string, ...any), title string, all, unconfirmed replay.Counts, withUnconfirmed bool) {
	if !withUnconfirmed {
		p("%s\toccurrences\n", title)
		for _, c := range all {
			p("%s\t%d\n", cell(c.Name), c.Count)
		}
		return
	}
	p("%s\toccurrences\tconfirmed\tunconfirmed\n", title)
	// By name once: looking each row up in the table cost the square of its rows.
	of := make(map[string]int, len(unconfirmed))
	for _, c := range unconfirmed {
		of[c.Name] = c.Count
	}
	for _, c := range all {
		u := of[c.Name]
		p("%s\t%d\t%d\t%d\n", cell(c.Name), c.Count, c.Count-u, u)
	}
}

// outcome spells a decision and its deciding rule: "block (acme/NO_SHELL)".
func outcome(o replay.Outcome) string {
	if o.Rule != "" {
		return o.Decision + " (" + o.Rule + ")"
	}
	return o.Decision
}

func orUnknown(digest string) string {
	if digest == "" {
		return "rules from files, not a bundle the log names"
	}
	return "bundle " + digest
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
