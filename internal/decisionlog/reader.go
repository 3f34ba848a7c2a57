package decisionlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/occurrence"
)

// MaxLineBytes bounds one line: Read reports a longer line as that line's error, and
// the Writer never writes one (it writes a too_long marker instead, see
// Writer.TooLong). It is far more than the line of any occurrence the sidecar accepts
// by default (1 MiB, whose line takes at most about twice that), and bounds what one
// line of any input makes Read hold.
const MaxLineBytes = 64 << 20

// Entry is one decision line read back.
type Entry struct {
	// Source names the input, when the caller sets it (a file); Line is the line's
	// number in it, from 1.
	Source string
	Line   int
	Record Record
	// Occ is the logged occurrence as the engine takes it, read as the sidecar reads a
	// POST /v1/evaluate body. Without the content (Record.Reproducible false) it
	// carries none.
	Occ *engine.Occurrence
}

// Log is what Read found in its input.
type Log struct {
	Entries []Entry
	// Skipped counts the JSON lines of another kind (publish_event records that share
	// the sidecar's stdout) and blank lines.
	Skipped int
}

// LineError is a line Read could not read.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Read reads a decision log: one JSON object per line, those of kind "decision" its
// records, any other JSON object skipped. A line that is not a JSON object, or a
// decision line that is malformed, is an error naming the line (a *LineError); every
// such error is returned, joined, with the entries that did read.
func Read(r io.Reader) (*Log, error) { return read(r, MaxLineBytes) }

// Errors lists the errors Read joined, so that each line's can be reported on its
// own: a *LineError per line that did not read, then the input's error, if any.
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// read is Read with lines bounded by maxLine bytes.
func read(r io.Reader, maxLine int) (*Log, error) {
	out := &Log{}
	var errs []error
	err := eachLine(r, maxLine, func(n int, line []byte, overLong int) {
		if overLong > 0 {
			errs = append(errs, &LineError{Line: n, Err: fmt.Errorf("the line is %d bytes, more than the %d a line may hold", overLong, maxLine)})
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			out.Skipped++
			return
		}
		e, isDecision, err := ReadLine(line)
		switch {
		case err != nil:
			errs = append(errs, &LineError{Line: n, Err: err})
		case !isDecision:
			out.Skipped++
		default:
			e.Line = n
			out.Entries = append(out.Entries, e)
		}
	})
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// eachLine calls fn with each line of r, numbered from 1, without its newline. A line
// longer than maxLine bytes is read past, not kept: fn gets its length as overLong
// instead, and the lines after it still read. The error is r's, naming the
// line it stopped in.
func eachLine(r io.Reader, maxLine int, fn func(n int, line []byte, overLong int)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	size, n := 0, 0
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if size <= maxLine+1 { // with its newline
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("line %d: %w", n+1, err)
		}
		if size > 0 {
			n++
			length := size
			if err == nil { // the chunk ends with the newline
				length--
			}
			if length > maxLine {
				fn(n, nil, length)
			} else {
				fn(n, line[:length], 0)
			}
		}
		if err == io.EOF {
			return nil
		}
		line, size = nil, 0
	}
}

// lineHead is what tells a decision line from another, and a too_long marker (see
// marshalTooLong) from a line that holds its occurrence.
type lineHead struct {
	Kind    string          `json:"kind"`
	TooLong json.RawMessage `json:"too_long"`
}

// lineBody is a decision line with its occurrence left raw, for occurrence.Decode.
type lineBody struct {
	Record
	Occurrence json.RawMessage `json:"occurrence"`
}

// ReadLine reads one line. isDecision is false for a JSON object of another kind.
func ReadLine(line []byte) (e Entry, isDecision bool, err error) {
	var head lineHead
	if err := json.Unmarshal(line, &head); err != nil {
		return Entry{}, false, fmt.Errorf("not a JSON object: %w", err)
	}
	if head.Kind != Kind {
		return Entry{}, false, nil
	}
	if len(head.TooLong) > 0 {
		return Entry{}, true, fmt.Errorf("the occurrence is not in the log: its line would have been %s bytes, more than the %d a line may hold, so the sidecar logged only that", head.TooLong, MaxLineBytes)
	}
	if err := exactMembers(line); err != nil {
		return Entry{}, true, fmt.Errorf("a decision line: %w", err)
	}
	var body lineBody
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	d.DisallowUnknownFields()
	if err := d.Decode(&body); err != nil {
		return Entry{}, true, fmt.Errorf("a decision line: %w", err)
	}
	if len(body.Occurrence) == 0 {
		return Entry{}, true, errors.New("a decision line: missing member \"occurrence\"")
	}
	occ, errs := occurrence.Decode(body.Occurrence, occurrence.HostMembers)
	if errs != nil {
		return Entry{}, true, fmt.Errorf("a decision line's occurrence: %w", errs)
	}
	rec := body.Record
	rec.Occurrence = Occurrence{Anchor: occ.Anchor, SessionID: occ.SessionID, Facts: occ.Facts, ToolCall: occ.ToolCall}
	if occ.HasRecentActivity {
		rec.Occurrence.RecentActivity = &occ.RecentActivity
	}
	if occ.HasContent {
		rec.Occurrence.Content = &occ.Content
	}
	if err := rec.check(occ); err != nil {
		return Entry{}, true, fmt.Errorf("a decision line: %w", err)
	}
	return Entry{Record: rec, Occ: occ}, true, nil
}

// check refuses a line whose members contradict each other.
func (r *Record) check(occ *engine.Occurrence) error {
	switch {
	case r.Decision == "":
		return errors.New("missing member \"decision\"")
	case r.Anchor != lossy(occ.Anchor) || r.Session != lossy(occ.SessionID):
		return errors.New("anchor and session_id differ from the occurrence's")
	case r.SessionState != nil && r.SessionState.Written == "" && r.SessionState.Read != "":
		return errors.New("session_state: a commit never leaves a session without a version, but \"written\" is empty")
	case r.SessionUnavailable && (r.SessionState != nil || r.SessionBegan):
		return errors.New("session_unavailable: an occurrence answered without its session found nothing of it, but the line has session_state or session_began")
	case r.SessionOutcomeUnknown != nil && r.SessionUnavailable:
		return errors.New("session_outcome_unknown: an occurrence whose commit's outcome is unknown did not leave the session alone, but the line has session_unavailable")
	case r.SessionOutcomeUnknown != nil && r.SessionState != nil && r.SessionOutcomeUnknown.Read != r.SessionState.Written:
		return errors.New("session_outcome_unknown: with session_state, it is the correction of the committed changes, which expects the version they left, but \"read\" is not session_state's \"written\"")
	case r.SessionOutcomeUnknown != nil && (r.SessionOutcomeUnknown.Written == "" || r.SessionOutcomeUnknown.Written == r.SessionOutcomeUnknown.Read):
		return errors.New("session_outcome_unknown: only a commit that changes the session is sent, and it leaves a new version, but \"written\" is empty or the version read")
	// Unlike this, session_state with an empty "read" needs no session_began: logs
	// written between commits c3c5b1b and c5b8004 have such lines, and they still read.
	case r.SessionOutcomeUnknown != nil && r.SessionOutcomeUnknown.Read == "" && !r.SessionBegan:
		return errors.New("session_outcome_unknown: \"read\" is empty, so the commit was made against a session the store held no state of, which the sidecar logs as session_began, but the line has no session_began")
	case r.Content == nil && occ.HasContent:
		return errors.New("the occurrence carries content but the line has no \"content\" member")
	case r.Content == nil:
		return nil
	case r.Content.Length < 0:
		return fmt.Errorf("content.length %d is negative", r.Content.Length)
	case r.Content.Length > MaxLineBytes:
		return fmt.Errorf("content.length %d is more code points than a line may hold (%d bytes)", r.Content.Length, MaxLineBytes)
	}
	switch r.Content.Mode {
	case ContentFull:
		if !occ.HasContent {
			return errors.New("content mode full but the occurrence carries no content")
		}
	case ContentOmit, ContentHash:
		if occ.HasContent {
			return fmt.Errorf("content mode %s but the occurrence carries its content", r.Content.Mode)
		}
	default:
		return fmt.Errorf("content mode %q is not one of omit, hash, full", r.Content.Mode)
	}
	return nil
}

// lossy is s as encoding/json writes and reads it back, a lone surrogate as U+FFFD:
// the line's own anchor and session_id members, written for log pipelines, are that.
func lossy(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// The members of a decision line and of its content member.
var (
	lineMembers    = []string{"kind", "time", "bundle", "session_id", "anchor", "occurrence", "content", "decision", "code", "rule", "fired", "applied", "session_began", "session_state", "session_unavailable", "session_outcome_unknown"}
	contentMembers = []string{"mode", "length", "sha256"}
	stateMembers   = []string{"read", "written"}
)

// exactMembers refuses what encoding/json would let through: a member given twice, or
// one whose name differs from a known one only in case.
func exactMembers(line []byte) error {
	v, err := engine.DecodeJSON(line)
	if err != nil {
		return err
	}
	obj, _ := v.(map[string]any)
	if err := known(obj, lineMembers, ""); err != nil {
		return err
	}
	if c, ok := obj["content"].(map[string]any); ok {
		if err := known(c, contentMembers, "content."); err != nil {
			return err
		}
	}
	for _, name := range []string{"session_state", "session_outcome_unknown"} {
		if st, ok := obj[name].(map[string]any); ok {
			if err := known(st, stateMembers, name+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

func known(obj map[string]any, names []string, prefix string) error {
	for k := range obj {
		if !slices.Contains(names, k) {
			return fmt.Errorf("unknown member %q", prefix+k)
		}
	}
	return nil
}
